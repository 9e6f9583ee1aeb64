package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore"
)

// cmdHistory prints the configured store's markers, newest slot first: a
// table, or with --json one object a line.
func cmdHistory(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("history", stderr)
	setUsage(fs, "[--job JOB]", `
Prints the store's markers, newest slot first: job, slot, state, outcome,
attempt, fence, holder, duration and error or reason; --json prints one object
a line, as the HTTP API does.
`+jobArg)
	job := fs.String("job", "", "only this `JOB`")
	state := fs.String("state", "", "only markers in this `STATE`: running, retrying, done, skipped, replaced, released, abandoned")
	n := fs.Int("n", 20, "at most this many markers, 1 to 10000")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkCount("history", *n); err != nil {
		return err
	}
	switch slotstore.State(*state) {
	case "", slotstore.StateRunning, slotstore.StateRetrying, slotstore.StateDone, slotstore.StateSkipped,
		slotstore.StateReplaced, slotstore.StateReleased, slotstore.StateAbandoned:
	default:
		return usageError{msg: fmt.Sprintf("history: --state %q: want running, retrying, done, skipped, replaced, released or abandoned", *state)}
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
	if err := knownJob(ctx, cfg, st, *job, false); *job != "" && err != nil {
		return usageError{msg: fmt.Sprintf("history: %v in %s", err, *path)}
	}
	ms, err := st.History(ctx, slotstore.HistoryParams{Job: *job, State: slotstore.State(*state), Limit: *n})
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	if *asJSON {
		return printJSONLines(stdout, ms, admin.MarkerJSON)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSLOT\tSTATE\tOUTCOME\tATTEMPT\tFENCE\tHOLDER\tDURATION\tERROR/REASON")
	for _, m := range ms {
		dur := ""
		if m.State == slotstore.StateDone {
			dur = m.Duration.Round(time.Millisecond).String()
		}
		state := string(m.State)
		switch {
		case m.Manual:
			state += " (manual)"
		case m.Backfill:
			state += " (backfill)"
		}
		note := m.Error
		if m.Reason != "" {
			note = strings.TrimSpace(m.Reason + " " + note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", m.Job, m.Slot.UTC().Format(time.RFC3339), state,
			m.Outcome, m.Attempt, m.Fence, m.Holder, dur, note)
	}
	return tw.Flush()
}

// printJSONLines writes each of xs, as view shows it, as one JSON object a
// line.
func printJSONLines[T, V any](w io.Writer, xs []T, view func(T) V) error {
	enc := json.NewEncoder(w)
	for _, x := range xs {
		if err := enc.Encode(view(x)); err != nil {
			return err
		}
	}
	return nil
}
