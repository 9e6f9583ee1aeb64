package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// cmdNext prints the next n slots of a configured job, or of an ad-hoc
// --schedule in --timezone: one RFC 3339 UTC instant a line, or with --json
// one object a line.
func cmdNext(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("next", stderr)
	job := fs.String("job", "", "job name from the configuration")
	spec := fs.String("schedule", "", "a cron spec to evaluate instead of --job")
	tz := fs.String("timezone", "", "time zone of --schedule (default UTC)")
	n := fs.Int("n", 5, "how many slots")
	from := fs.String("from", "", "start after this RFC 3339 instant (default now)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*job == "") == (*spec == "") {
		return usageError{msg: "next: give exactly one of --job or --schedule"}
	}
	if *n < 1 {
		return usageError{msg: fmt.Sprintf("next: -n %d: want at least 1", *n)}
	}
	t := time.Now()
	if *from != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *from); err != nil {
			return usageError{msg: fmt.Sprintf("next: --from %q: want RFC 3339, such as 2026-03-28T00:00:00+01:00", *from)}
		}
	}
	name, sched, err := nextSchedule(ctx, *path, *job, *spec, *tz, reg)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	loc := sched.Location()
	for i := 0; i < *n; i++ {
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		if !*asJSON {
			fmt.Fprintln(stdout, t.UTC().Format(time.RFC3339))
			continue
		}
		line := struct {
			Job   string `json:"job"`
			Slot  string `json:"slot"`
			Local string `json:"local"`
			Key   string `json:"key"`
		}{name, t.UTC().Format(time.RFC3339), t.In(loc).Format(time.RFC3339), jobs.Run{Job: name, Slot: t}.Key()}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

func nextSchedule(ctx context.Context, path, job, spec, tz string, reg *jobs.Registry) (string, *schedule.Schedule, error) {
	if spec != "" {
		s, err := schedule.Parse(spec, tz)
		if err != nil {
			return "", nil, usageError{msg: "next: " + err.Error()}
		}
		return "", s, nil
	}
	plans, err := interruptible(ctx, "while loading "+path, func(ctx context.Context) ([]engine.JobSpec, error) {
		cfg, err := Load(path)
		if err != nil {
			return nil, err
		}
		plans, _, err := cfg.resolveContext(ctx, reg)
		return plans, err
	})
	if err != nil {
		return "", nil, err
	}
	for _, p := range plans {
		if p.Name == job {
			return p.Name, p.Schedule, nil
		}
	}
	return "", nil, usageError{msg: fmt.Sprintf("next: no job %q in %s", job, path)}
}
