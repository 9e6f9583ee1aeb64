package scheduler

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore"
)

// cmdActions prints the store's actions log, newest first: a table, or
// with --json one object a line.
func cmdActions(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("actions", stderr)
	setUsage(fs, "[--who WHO] [--kind KIND] [--target JOB]", `
Prints the store's actions log, newest first: every pause, resume, trigger,
backfill and schedule write made through the HTTP API, the CLI or the Go API,
the pauses slotcron made after failures, and the configuration revisions that
took effect, each with the store's time, who (a token's name, "cli user@host",
"slotcron"), the role, how (http, cli, go, slotcron), what, on what, why and
how it ended. Entries are kept for actions_history (default 90 days).
`)
	who := fs.String("who", "", "only actions by `WHO`")
	kind := fs.String("kind", "", "only actions of this `KIND`: pause, resume, trigger, backfill, schedule-put, schedule-create, schedule-delete, schedule-pause, schedule-resume, config")
	target := fs.String("target", "", "only actions on this `JOB` or schedule")
	since := fs.String("since", "", "only actions from this `TIME` on (RFC 3339), or this long ago (a duration, such as 24h)")
	before := fs.Int64("before", 0, "only actions older than this `SEQ` (the seq of a page's last line)")
	n := fs.Int("n", 50, "at most this many actions, 1 to 1000")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 1000 {
		return usageError{msg: fmt.Sprintf("actions: -n %d: want 1 to 1000", *n)}
	}
	if *before < 0 {
		return usageError{msg: fmt.Sprintf("actions: --before %d: want a seq, a positive number", *before)}
	}
	p := slotstore.ActionsParams{Who: *who, Kind: *kind, Target: *target, Before: *before, Limit: *n}
	if *since != "" {
		t, err := sinceTime(*since, time.Now())
		if err != nil {
			return usageError{msg: "actions: --since: " + err.Error()}
		}
		p.Since = t
	}
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	st, err := backend.OpenLogged(ctx, cfg.backendConfig(), newLogger(cfg.Log, os.Stderr))
	if err != nil {
		return err
	}
	defer st.Close()
	as, err := st.Actions(ctx, p)
	if err != nil {
		return fmt.Errorf("read the actions log: %w", err)
	}
	if *asJSON {
		return printJSONLines(stdout, as, admin.ActionJSON)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tWHO\tROLE\tVIA\tKIND\tTARGET\tRESULT\tREASON\tDETAIL")
	for _, a := range as {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Seq, a.At.UTC().Format(time.RFC3339), a.Who, orDash(a.Role),
			a.Via, a.Kind, orDash(a.Target), oneLine(a.Result), orDash(oneLine(a.Reason)), orDash(oneLine(a.Detail)))
	}
	return tw.Flush()
}

// sinceTime reads s, an RFC 3339 time or a duration back from now.
func sinceTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time or a duration such as 24h", s)
	}
	return now.Add(-d), nil
}
