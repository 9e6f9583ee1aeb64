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
// --schedule in --timezone: one a line, in UTC and in the schedule's zone
// (nextLine), or with --json one object a line.
func cmdNext(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("next", stderr)
	setUsage(fs, "--job JOB | --schedule SPEC", `
Prints the next slots of JOB, or of a cron SPEC in --timezone, one a line: the
slot in UTC and, for a zone other than UTC, in the schedule's own time zone;
--json prints one object a line with both and the run key. A slot a calendar of
the job's except skips is printed with "skipped: calendar NAME" ("skip" in
JSON): it is the job's, and recorded skipped, not run. The job's active window,
max_runs and dst rule apply; --gap and --repeat give a SPEC a dst rule.
`+jobArg)
	job := fs.String("job", "", "the `JOB` whose slots to print")
	spec := fs.String("schedule", "", "a cron `SPEC` to evaluate instead of --job")
	tz := fs.String("timezone", "", "IANA time `ZONE` of --schedule (default UTC)")
	n := fs.Int("n", 5, "how many slots, 1 to 10000")
	from := fs.String("from", "", "start after this RFC 3339 `TIME` (default now)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	gap := fs.String("gap", "", "dst gap rule of --schedule: `shift` (default) or skip")
	repeat := fs.String("repeat", "", "dst repeat rule of --schedule: `first` (default) or both")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*job == "") == (*spec == "") {
		return usageError{msg: "next: give exactly one of --job or --schedule"}
	}
	if *job != "" && (*gap != "" || *repeat != "") {
		return usageError{msg: "next: --gap and --repeat go with --schedule; a job's own dst rule applies to --job"}
	}
	if err := checkCount("next", *n); err != nil {
		return err
	}
	t := time.Now()
	if *from != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *from); err != nil {
			return usageError{msg: fmt.Sprintf("next: --from %q: want RFC 3339, such as 2026-03-28T00:00:00+01:00", *from)}
		}
	}
	j, err := nextSchedule(ctx, *path, *job, *spec, *tz, schedule.DST{Gap: schedule.Gap(*gap), Repeat: schedule.Repeat(*repeat)}, reg)
	if err != nil {
		return err
	}
	name, sched := j.Name, j.Schedule
	enc := json.NewEncoder(stdout)
	loc := sched.Location()
	for i := 0; i < *n; i++ {
		if ctx.Err() != nil {
			return interrupted(ctx, "while printing slots", nil)
		}
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		skip := engine.Excluded(j, t)
		if !*asJSON {
			if skip != "" {
				fmt.Fprintln(stdout, nextLine(t, loc)+"  skipped: "+skip)
			} else {
				fmt.Fprintln(stdout, nextLine(t, loc))
			}
			continue
		}
		line := struct {
			Job      string `json:"job"`
			Slot     string `json:"slot"`
			Local    string `json:"local"`
			Timezone string `json:"timezone"`
			Key      string `json:"key"`
			Skip     string `json:"skip,omitempty"`
		}{name, t.UTC().Format(time.RFC3339), t.In(loc).Format(time.RFC3339), loc.String(), jobs.Run{Job: name, Slot: t}.Key(), skip}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// nextLine is a slot as next prints it: in UTC, then in loc with its
// offset and zone unless loc is UTC, such as
// "2026-03-29T01:00:00Z  2026-03-29T03:00:00+02:00 Europe/Berlin".
func nextLine(t time.Time, loc *time.Location) string {
	utc := t.UTC().Format(time.RFC3339)
	if loc.String() == "UTC" {
		return utc
	}
	return utc + "  " + t.In(loc).Format(time.RFC3339) + " " + loc.String()
}

// nextSchedule is the job named job of the configuration at path, or one
// made of spec in zone tz under the DST rule dst.
func nextSchedule(ctx context.Context, path, job, spec, tz string, dst schedule.DST, reg *jobs.Registry) (engine.JobSpec, error) {
	if spec != "" {
		s, err := schedule.Parse(spec, tz)
		if err == nil && dst != (schedule.DST{}) {
			s, err = s.WithDST(dst)
		}
		if err != nil {
			return engine.JobSpec{}, usageError{msg: "next: " + err.Error()}
		}
		return engine.JobSpec{Schedule: s}, nil
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
		return engine.JobSpec{}, err
	}
	for _, p := range plans {
		if p.Name == job {
			return p, nil
		}
	}
	return engine.JobSpec{}, usageError{msg: fmt.Sprintf("next: no job %q in %s", job, path)}
}
