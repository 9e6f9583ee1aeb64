package scheduler

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

const schedulesUsage = `usage: scheduler schedules <put|get|list|delete|pause|resume> [flags] [ID]

Reads and writes the schedules held as data of the store the configuration file
configures: one registered job run on its own schedule and params, per tenant,
created and changed while the replicas run. They learn of a write within
seconds. A schedule's policies left out take, when it is written, those of the
file's job of the same registered job, else the file's defaults.

  put ID     create or replace (flags, or -f FILE: a JSON object as the HTTP API takes)
  get ID     print one schedule
  list       print schedules, sorted by ID (--job, --prefix, --after, -n)
  delete ID  delete: no slot of it starts once the command has returned
  pause ID   pause it on every replica (--reason)
  resume ID  resume it

Run 'scheduler schedules <command> -h' for a command's flags.
`

// cmdSchedules runs a schedules subcommand.
func cmdSchedules(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	if len(args) == 0 || isHelpFlag(args[0]) || args[0] == "help" {
		fmt.Fprint(stderr, schedulesUsage)
		if len(args) == 0 {
			return fmt.Errorf("%w: %w", errReported, usageError{msg: "schedules: a command is required"})
		}
		return flag.ErrHelp
	}
	sub, rest := args[0], args[1:]
	ctx = engine.WithActor(ctx, cliActor(defaultBy()))
	fs, path := newFlags("schedules "+sub, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	var run func(*Schedules, []string) error
	switch sub {
	case "put":
		run = schedulePut(ctx, fs, stdout, asJSON)
	case "get":
		run = func(s *Schedules, pos []string) error {
			sc, err := s.Get(ctx, pos[0])
			if err != nil {
				return err
			}
			return printSchedules(stdout, []Schedule{sc}, *asJSON, true)
		}
	case "list":
		run = scheduleList(ctx, fs, stdout, asJSON)
	case "delete":
		version := fs.Int64("if-version", 0, "delete only if the schedule is at this `VERSION`")
		run = func(s *Schedules, pos []string) error {
			if err := s.Delete(ctx, pos[0], *version); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted schedule %s\n", pos[0])
			return nil
		}
	case "pause", "resume":
		reason := fs.String("reason", "", "why (required to pause): shown to whoever looks next")
		run = func(s *Schedules, pos []string) error {
			if sub == "pause" && strings.TrimSpace(*reason) == "" {
				return usageError{msg: "schedules pause: --reason is required: say why, for whoever looks next"}
			}
			if err := s.setPause(ctx, pos[0], sub == "pause", *reason); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%sd schedule %s\n", sub, pos[0])
			return nil
		}
	default:
		fmt.Fprint(stderr, schedulesUsage)
		return fmt.Errorf("%w: %w", errReported, usageError{msg: fmt.Sprintf("schedules: unknown command %q", sub)})
	}
	pos, err := parseFlagsArgs(fs, rest)
	if err != nil {
		return err
	}
	if want := map[bool]int{true: 0, false: 1}[sub == "list" || sub == "put" && hasFile(fs)]; len(pos) != want {
		return usageError{msg: fmt.Sprintf("schedules %s: want %d argument (ID), got %d", sub, want, len(pos))}
	}
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	s, err := OpenSchedules(ctx, cfg, reg)
	if err != nil {
		return err
	}
	defer s.Close()
	return run(s.By(defaultBy()), pos)
}

func hasFile(fs *flag.FlagSet) bool { f := fs.Lookup("f"); return f != nil && f.Value.String() != "" }

// schedulePut defines put's flags and returns what it runs.
func schedulePut(ctx context.Context, fs *flag.FlagSet, stdout io.Writer, asJSON *bool) func(*Schedules, []string) error {
	file := fs.String("f", "", "read the schedule from `FILE` (- for stdin): a JSON object as the HTTP API takes, or an array of them")
	create := fs.Bool("create", false, "fail if the schedule exists")
	var j admin.ScheduleJSON
	fs.StringVar(&j.Job, "job", "", "the registered `JOB` to run (required)")
	fs.StringVar(&j.Schedule, "schedule", "", "cron `SPEC` or @every DURATION (required)")
	fs.StringVar(&j.Timezone, "timezone", "", "IANA time `ZONE`")
	params := fs.String("params", "", "params handed to runs, a `JSON` value")
	fs.StringVar(&j.Start, "start", "", "first instant of its slots, RFC 3339")
	fs.StringVar(&j.End, "end", "", "last instant of its slots, RFC 3339")
	for _, d := range []struct {
		name string
		to   *string
	}{{"lease", &j.Lease}, {"timeout", &j.Timeout}, {"starting-deadline", &j.StartingDeadline}, {"history", &j.History},
		{"jitter", &j.Jitter}, {"on-crash", &j.OnCrash}, {"overlap", &j.Overlap}, {"catch-up", &j.CatchUp},
		{"after-data-loss", &j.AfterDataLoss}} {
		fs.StringVar(d.to, d.name, "", "the schedule's "+strings.ReplaceAll(d.name, "-", "_")+" (default: the job's)")
	}
	fs.Int64Var(&j.Version, "if-version", 0, "write only if the schedule is at this `VERSION`")
	return func(s *Schedules, pos []string) error {
		var in []admin.ScheduleJSON
		if *file != "" {
			var err error
			if in, err = readScheduleFile(*file); err != nil {
				return usageError{msg: "schedules put: " + err.Error()}
			}
		} else {
			j.ID, j.Params = pos[0], json.RawMessage(*params)
			in = []admin.ScheduleJSON{j}
		}
		// Every schedule is checked before any is written: a file with one
		// bad schedule writes nothing.
		scs := make([]Schedule, len(in))
		for i, sj := range in {
			sc, err := scheduleFromJSON(sj)
			if err == nil {
				_, err = s.toWrite(sc, 0)
			}
			if err != nil {
				return fmt.Errorf("schedule %s: %w (nothing written)", sj.ID, err)
			}
			if *create {
				sc.Version = 0
			}
			scs[i] = sc
		}
		out, err := s.putMany(ctx, scs, *create)
		if err != nil {
			return err
		}
		if *asJSON {
			return printSchedules(stdout, out, true, false)
		}
		for _, sc := range out {
			fmt.Fprintf(stdout, "put schedule %s (version %d)\n", sc.ID, sc.Version)
		}
		return nil
	}
}

// readScheduleFile reads one schedule, or an array of them, as JSON.
func readScheduleFile(path string) ([]admin.ScheduleJSON, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "[") {
		var many []admin.ScheduleJSON
		if err := dec.Decode(&many); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return many, nil
	}
	var one admin.ScheduleJSON
	if err := dec.Decode(&one); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []admin.ScheduleJSON{one}, nil
}

// scheduleList defines list's flags and returns what it runs.
func scheduleList(ctx context.Context, fs *flag.FlagSet, stdout io.Writer, asJSON *bool) func(*Schedules, []string) error {
	var q ListSchedules
	fs.StringVar(&q.Job, "job", "", "only the schedules of registered `JOB`")
	fs.StringVar(&q.Prefix, "prefix", "", "only IDs that begin with `PREFIX`")
	fs.StringVar(&q.After, "after", "", "only IDs after `ID`: the next page")
	fs.IntVar(&q.Limit, "n", 100, "at most `N` (1 to 10000)")
	return func(s *Schedules, _ []string) error {
		if err := checkCount("schedules list", q.Limit); err != nil {
			return err
		}
		scs, err := s.List(ctx, q)
		if err != nil {
			return err
		}
		return printSchedules(stdout, scs, *asJSON, false)
	}
}

// printSchedules prints scs: as JSON (one object when one, else an array),
// or a table.
func printSchedules(w io.Writer, scs []Schedule, asJSON, one bool) error {
	if asJSON {
		out := make([]admin.ScheduleJSON, len(scs))
		for i, sc := range scs {
			out[i] = scheduleJSON(sc)
		}
		if one {
			return json.NewEncoder(w).Encode(out[0])
		}
		return json.NewEncoder(w).Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tJOB\tSCHEDULE\tTIMEZONE\tVERSION\tPAUSED\tUPDATED BY")
	for _, sc := range scs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%t\t%s\n", sc.ID, sc.Job, sc.Schedule, sc.Policy.Timezone, sc.Version, sc.Paused, sc.UpdatedBy)
	}
	if one && len(scs) == 1 && len(scs[0].Params) > 0 {
		fmt.Fprintf(tw, "\nparams: %s\n", scs[0].Params)
	}
	return tw.Flush()
}

// putMany writes scs, creates only when create, one store round trip per
// 1,000, and fails on the first that was refused, naming every refusal.
func (s *Schedules) putMany(ctx context.Context, scs []Schedule, create bool) ([]Schedule, error) {
	var res []PutResult
	var err error
	if create {
		res, err = s.createAll(ctx, scs)
	} else {
		res, err = s.PutAll(ctx, scs)
	}
	if err != nil {
		return nil, err
	}
	var out []Schedule
	var refused []string
	for i, r := range res {
		if r.Err != nil {
			refused = append(refused, fmt.Sprintf("schedule %s: %v", scs[i].ID, r.Err))
			continue
		}
		out = append(out, r.Schedule)
	}
	if len(refused) > 0 {
		return out, fmt.Errorf("%d of %d schedules refused:\n%s", len(refused), len(scs), strings.Join(refused, "\n"))
	}
	return out, nil
}
