package scheduler

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore"
)

// cmdPause pauses (or, with paused false, resumes) one job or, with no job,
// the whole cluster, in the store: every replica obeys within a second.
func cmdPause(ctx context.Context, name string, paused bool, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags(name, stderr)
	pos, err := parseFlagsArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{msg: fmt.Sprintf("%s: at most one job, not %q", name, strings.Join(pos, " "))}
	}
	var job string
	if len(pos) == 1 {
		job = pos[0]
	}
	cfg, err := loadConfig(ctx, *path, reg)
	if err != nil {
		return err
	}
	if _, ok := cfg.Jobs[job]; job != "" && !ok {
		return usageError{msg: fmt.Sprintf("%s: no job %q in %s", name, job, *path)}
	}
	st, err := backend.Open(ctx, cfg.backendConfig())
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: paused}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ps, err := st.Pauses(ctx)
	if err != nil {
		return fmt.Errorf("%s: read pauses: %w", name, err)
	}
	what := "cluster"
	if job != "" {
		what = job
	}
	fmt.Fprintf(stdout, "%sd %s; paused now: all=%v jobs=[%s]\n", name, what, ps.All, strings.Join(ps.Jobs, " "))
	return nil
}

// cmdTrigger runs a job now as a manual slot, in this process, and reports
// how it ended; exit 1 unless it succeeded.
func cmdTrigger(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("trigger", stderr)
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
	res, err := s.Trigger(ctx, pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s fence %d: %s\n", res.Job, res.Slot.UTC().Format(time.RFC3339), res.Fence, res.End)
	if res.End != EndSucceeded {
		return fmt.Errorf("manual run ended %s", res.End)
	}
	return nil
}
