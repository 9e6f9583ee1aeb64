package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// cmdBackfill runs, in this process, the slots of a job in a range that
// never ran, one after another, each claimed like any slot; with --dry-run
// it prints what it would run. Exit 1 unless every slot it ran succeeded.
func cmdBackfill(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("backfill", stderr)
	from := fs.String("from", "", "first slot to consider: RFC 3339, YYYY-MM-DD[THH:MM[:SS]] in the job's time zone, or a negative duration from now such as -2h (required)")
	to := fs.String("to", "", "last slot to consider, as --from (default now)")
	dry := fs.Bool("dry-run", false, "print the slots that would run, and run nothing")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: scheduler backfill [flags] JOB\n\n"+
			"Runs JOB's scheduled slots from --from to --to that never ran (no marker, or\n"+
			"recorded skipped: missed during an outage, left by catch_up), one after another,\n"+
			"here, each claimed like any slot: safe beside running replicas and safe to\n"+
			"repeat. Slots that ran, run or wait for a retry are left alone; so is a slot\n"+
			"skipped for data loss, which may have run. At most %d slots at a time.\n%s\n\nflags:\n", MaxBackfill, jobArg)
		fs.PrintDefaults()
	}
	pos, err := parseFlagsArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{msg: "backfill: name exactly one job (scheduler backfill JOB --from T)"}
	}
	if *from == "" {
		return usageError{msg: "backfill: --from is required"}
	}
	job := pos[0]
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	st, err := backend.OpenLogged(ctx, cfg.backendConfig(), newLogger(cfg.Log, stderr))
	if err != nil {
		return err
	}
	defer st.Close()
	s, loc, err := backfiller(ctx, cfg, reg, st, job, *path, stderr)
	if err != nil {
		return err
	}
	p := BackfillParams{DryRun: *dry, To: time.Now()}
	if p.From, err = parseWhenAt(*from, loc, p.To); err != nil {
		return usageError{msg: fmt.Sprintf("backfill: --from %q: %v", *from, err)}
	}
	if *to != "" {
		if p.To, err = parseWhenAt(*to, loc, p.To); err != nil {
			return usageError{msg: fmt.Sprintf("backfill: --to %q: %v", *to, err)}
		}
	}
	res, err := s.Backfill(engine.WithActor(ctx, cliActor(defaultBy())), job, p)
	if errors.Is(err, ErrBackfillRange) {
		return usageError{msg: "backfill: " + err.Error()}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(backfillJSON(res, *dry)); err != nil {
			return err
		}
	} else {
		printBackfill(stdout, res, loc, *dry)
	}
	if *dry {
		return nil
	}
	bad := 0
	for _, sl := range res.Slots {
		if sl.Action == BackfillRun && sl.End != EndSucceeded {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d slot(s) to run did not succeed", bad, res.ToRun())
	}
	return nil
}

// backfiller returns the scheduler that backfills job of cfg on st, a job
// of the file or a schedule held as data, and the zone its bounds are read
// in.
func backfiller(ctx context.Context, cfg *Config, reg *jobs.Registry, st slotstore.Store, job, path string, stderr io.Writer) (*Scheduler, *time.Location, error) {
	if err := knownJob(ctx, cfg, st, job, true); err != nil {
		return nil, nil, usageError{msg: fmt.Sprintf("backfill: %v in %s", err, path)}
	}
	s, err := New(cfg, reg, WithLogger(newLogger(cfg.Log, stderr)), WithStore(st))
	if err != nil {
		return nil, nil, err
	}
	if _, ok := cfg.Jobs[job]; !ok {
		if err := s.eng.TakeSchedule(ctx, st, job); err != nil {
			return nil, nil, err
		}
	}
	loc := time.UTC
	if j, ok := s.eng.Job(job); ok {
		loc = j.Schedule.Location()
	}
	return s, loc, nil
}

// whenLayouts are the forms a backfill bound may take besides RFC 3339,
// read in the job's time zone.
var whenLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

func parseWhen(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, l := range whenLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 (2026-11-30T02:00:00Z) or YYYY-MM-DD[THH:MM[:SS]] in %s", loc)
}

// printBackfill prints one line a slot: its time in UTC and in the job's
// zone, what the backfill did or would do, and why.
func printBackfill(w io.Writer, res BackfillResult, loc *time.Location, dry bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SLOT (UTC)\tLOCAL (%s)\tACTION\tMARKER\tRESULT\n", loc)
	for _, sl := range res.Slots {
		marker := "none"
		if sl.State != "" {
			marker = string(sl.State)
		}
		if sl.Reason != "" {
			marker += ": " + sl.Reason
		}
		action, result := "leave", ""
		if sl.Action == BackfillRun {
			action = "run"
			if dry {
				action = "would run"
			}
			switch {
			case sl.Err != "":
				result = sl.Err
			case sl.End != "":
				result = fmt.Sprintf("%s (fence %d)", sl.End, sl.Fence)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sl.Slot.UTC().Format(time.RFC3339), sl.Slot.In(loc).Format("2006-01-02 15:04:05"), action, marker, result)
	}
	_ = tw.Flush()
	n := res.ToRun()
	if dry {
		fmt.Fprintf(w, "%s: %d slot(s), %d would run\n", res.Job, len(res.Slots), n)
		return
	}
	fmt.Fprintf(w, "%s: %d slot(s), %d to run\n", res.Job, len(res.Slots), n)
}

// backfillJSON is a backfill's result as --json prints it, in the HTTP API's
// style.
func backfillJSON(res BackfillResult, dry bool) any {
	type slot struct {
		Slot   string          `json:"slot"`
		Action string          `json:"action"`
		State  slotstore.State `json:"state,omitempty"`
		Reason string          `json:"reason,omitempty"`
		Fence  int64           `json:"fence,omitempty"`
		End    string          `json:"end,omitempty"`
		Error  string          `json:"error,omitempty"`
	}
	out := struct {
		Job    string `json:"job"`
		DryRun bool   `json:"dry_run"`
		ToRun  int    `json:"to_run"`
		Slots  []slot `json:"slots"`
	}{Job: res.Job, DryRun: dry, ToRun: res.ToRun(), Slots: []slot{}}
	for _, s := range res.Slots {
		out.Slots = append(out.Slots, slot{Slot: s.Slot.UTC().Format(time.RFC3339), Action: s.Action, State: s.State,
			Reason: s.Reason, Fence: s.Fence, End: string(s.End), Error: s.Err})
	}
	return out
}
