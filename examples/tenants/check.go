package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/scheduler"
)

// check compares the digests recorded in [from, to] with each tenant's due
// slots there, computed here: every second of the window read in the
// tenant's zone, due when its minute and second are the tenant's. It fails
// on a due slot not run once, a slot run that was not due, or fences of a
// tenant that do not grow with its slots.
func check(ctx context.Context, s *scheduler.Schedules, db *pgxpool.Pool, from, to time.Time) error {
	due := map[string]map[int64]bool{}
	for after := ""; ; {
		page, err := s.List(ctx, scheduler.ListSchedules{After: after, Limit: 10000})
		if err != nil {
			return err
		}
		for _, sc := range page {
			var sec, min int
			if _, err := fmt.Sscanf(sc.Schedule, "%d %d * * * *", &sec, &min); err != nil {
				return fmt.Errorf("%s: schedule %q: %w", sc.ID, sc.Schedule, err)
			}
			loc, err := time.LoadLocation(sc.Policy.Timezone)
			if err != nil {
				return err
			}
			due[sc.ID] = map[int64]bool{}
			for t := from; !t.After(to); t = t.Add(time.Second) {
				if l := t.In(loc); l.Minute() == min && l.Second() == sec {
					due[sc.ID][t.Unix()] = true
				}
			}
		}
		if len(page) < 10000 {
			break
		}
		after = page[len(page)-1].ID
	}
	rows, err := db.Query(ctx, `SELECT schedule, slot, fence FROM digests WHERE slot BETWEEN $1 AND $2 ORDER BY schedule, slot`, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	ran := map[string]map[int64]int{}
	lastFence := map[string]int64{}
	var problems []string
	for rows.Next() {
		var id string
		var slot time.Time
		var fence int64
		if err := rows.Scan(&id, &slot, &fence); err != nil {
			return err
		}
		if ran[id] == nil {
			ran[id] = map[int64]int{}
		}
		if ran[id][slot.Unix()]++; fence <= lastFence[id] {
			problems = append(problems, fmt.Sprintf("%s: fence %d at %s after %d", id, fence, slot.UTC().Format(time.RFC3339), lastFence[id]))
		}
		lastFence[id] = fence
	}
	if err := rows.Err(); err != nil {
		return err
	}
	nDue, nRan := 0, 0
	for id, slots := range due {
		for slot := range slots {
			nDue++
			if n := ran[id][slot]; n != 1 {
				problems = append(problems, fmt.Sprintf("%s: due slot %s ran %d times", id, time.Unix(slot, 0).UTC().Format(time.RFC3339), n))
			}
		}
	}
	for id, slots := range ran {
		for slot, n := range slots {
			nRan += n
			if !due[id][slot] {
				problems = append(problems, fmt.Sprintf("%s: slot %s ran but was not due", id, time.Unix(slot, 0).UTC().Format(time.RFC3339)))
			}
		}
	}
	fmt.Printf("window %s to %s: %d tenants, %d slots due, %d runs, %d problems\n", from.Format(time.RFC3339),
		to.Format(time.RFC3339), len(due), nDue, nRan, len(problems))
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], "... and "+strconv.Itoa(len(problems)-20)+" more")
		}
		return fmt.Errorf("check failed:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}
