package scheduler

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// maxPauseNote is the most bytes --by and --reason may hold: what every
// store keeps (slotstore.PauseParams).
const maxPauseNote = 1000

// cmdPause pauses (or, with paused false, resumes) one job or, with no job,
// the whole cluster, in the store: every replica obeys within a second. It
// records who did it and why with the pause, and prints what is paused
// afterwards, with who paused it, when and why.
func cmdPause(ctx context.Context, name string, paused bool, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags(name, stderr)
	reason := fs.String("reason", "", "why: a short `TEXT`, required, kept with the pause and shown with it")
	by := fs.String("by", defaultBy(), "`WHO` pauses or resumes, kept with the pause")
	if paused {
		setUsage(fs, "--reason TEXT [JOB]", `
Pauses JOB, or with no JOB the whole cluster, in the store: within a second
every replica stops starting its slots (recorded skipped, reason paused) until
resume. Slots already running go on. The pause keeps --by, --reason and the
store's time; this command prints every pause in force with them.
`+jobArg)
	} else {
		setUsage(fs, "--reason TEXT [JOB]", `
Resumes JOB, or with no JOB the whole cluster: slots from now on start again.
Resuming the cluster leaves the pauses of single jobs in force, and resuming a
job does not lift a pause of the cluster. Prints the pauses still in force.
`+jobArg)
	}
	pos, err := parseFlagsArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{msg: fmt.Sprintf("%s: at most one job, not %q", name, strings.Join(pos, " "))}
	}
	*reason, *by = strings.TrimSpace(*reason), strings.TrimSpace(*by)
	if err := checkPauseNote(name, *reason, *by); err != nil {
		return err
	}
	var job string
	if len(pos) == 1 {
		job = pos[0]
	}
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, os.Stderr)
	st, err := backend.OpenLogged(ctx, cfg.backendConfig(), log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := knownJob(ctx, cfg, st, job, true); job != "" && err != nil {
		return usageError{msg: fmt.Sprintf("%s: %v in %s", name, err, *path)}
	}
	before, err := st.Pauses(ctx)
	if err != nil {
		return fmt.Errorf("%s: read pauses: %w", name, err)
	}
	err = st.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: paused, By: *by, Reason: *reason})
	engine.RecordAction(ctx, st, log, cfg.actionsRetain(), cliActor(*by), engine.Act{Kind: name, Target: job, Reason: *reason, Err: err})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ps, err := st.Pauses(ctx)
	if err != nil {
		return fmt.Errorf("%s: read pauses: %w", name, err)
	}
	what := "the whole cluster"
	if job != "" {
		what = job
	}
	was := before.All // the job, or the cluster, paused in its own right
	if job != "" {
		was = slices.Contains(before.Jobs, job)
	}
	if !paused && !was {
		// Nothing to undo: not an error, but not "resumed" either.
		fmt.Fprintf(stdout, "%s was not paused; nothing to resume\n", what)
	} else {
		fmt.Fprintf(stdout, "%sd %s, by %s: %s\n", name, what, *by, *reason)
	}
	return printPauses(stdout, ps)
}

// checkPauseNote checks the --reason and --by of a pause or resume.
func checkPauseNote(name, reason, by string) error {
	switch {
	case reason == "":
		return usageError{msg: fmt.Sprintf("%s: --reason is required: say why, such as --reason 'migrating the billing database'", name)}
	case len(reason) > maxPauseNote:
		return usageError{msg: fmt.Sprintf("%s: --reason is %d bytes; at most %d", name, len(reason), maxPauseNote)}
	case by == "":
		return usageError{msg: fmt.Sprintf("%s: --by is empty: name who %ss", name, name)}
	case len(by) > maxPauseNote:
		return usageError{msg: fmt.Sprintf("%s: --by is %d bytes; at most %d", name, len(by), maxPauseNote)}
	}
	return nil
}

// clusterPause names the cluster's pause where jobs are listed: no job
// name holds a space.
const clusterPause = "(whole cluster)"

// printPauses prints what is paused, one line a pause: what, since when
// (store time, UTC), by whom and why.
func printPauses(w io.Writer, ps slotstore.Pauses) error {
	if !ps.All && len(ps.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "nothing is paused")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PAUSED\tSINCE\tBY\tREASON")
	row := func(what, key string) {
		note, ok := ps.Notes[key]
		if !ok {
			// Set before the store kept notes.
			fmt.Fprintf(tw, "%s\t-\t-\t-\n", what)
			return
		}
		since := "-"
		if !note.At.IsZero() {
			since = note.At.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", what, since, orDash(note.By), orDash(oneLine(note.Reason)))
	}
	if ps.All {
		row(clusterPause, "")
	}
	for _, job := range ps.Jobs {
		row(job, job)
	}
	return tw.Flush()
}

// defaultBy is who pauses from this shell: "cli", the OS user and host.
func defaultBy() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "cli " + name + "@" + host
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a table row one line whatever a reason holds.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cmdTrigger runs a job now as a manual slot, in this process, and reports
// how it ended; exit 1 unless it succeeded.
func cmdTrigger(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("trigger", stderr)
	setUsage(fs, "JOB", `
Runs JOB now, in this process, as a manual slot of its own (the current second,
or the next one no scheduled slot or other trigger holds), claimed like any slot
so it runs once, obeying the job's overlap policy, and recorded in history as
manual. Exit 0 only if the run succeeded.
`+jobArg)
	pos, err := parseFlagsArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{msg: "trigger: name exactly one job"}
	}
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	s, err := New(cfg, reg, WithLogger(newLogger(cfg.Log, stderr)))
	if err != nil {
		return err
	}
	res, err := s.Trigger(engine.WithActor(ctx, cliActor(defaultBy())), pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s fence %d: %s\n", res.Job, res.Slot.UTC().Format(time.RFC3339), res.Fence, res.End)
	if res.End != EndSucceeded {
		return fmt.Errorf("manual run ended %s", res.End)
	}
	return nil
}

// knownJob is nil when job is a job of cfg or a schedule held as data in
// st (live only, with live; deleted too, for its history), and otherwise
// says there is none.
func knownJob(ctx context.Context, cfg *Config, st slotstore.Store, job string, live bool) error {
	if _, ok := cfg.Jobs[job]; ok {
		return nil
	}
	es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{job}, Limit: 1})
	if err != nil {
		return fmt.Errorf("read the catalog: %w", err)
	}
	if len(es) == 1 && es[0].Run != "" && (!live || !es[0].Deleted) {
		return nil
	}
	return fmt.Errorf("no job or schedule %q", job)
}
