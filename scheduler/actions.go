// The actions log, as the facade writes it: who triggers, backfills,
// pauses and writes schedules through the Go API and the CLI, recorded in
// the store after each (engine.RecordAction).

package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// actionsRetain is how long the store keeps the actions cfg's replicas and
// tools record.
func (c *Config) actionsRetain() time.Duration {
	if c == nil || c.ActionsHistory.D() <= 0 {
		return engine.DefaultActionsHistory
	}
	return c.ActionsHistory.D()
}

// cliActor is who acts through the CLI: who as --by names it. A command
// puts it in its context (engine.WithActor), as the HTTP API puts its
// caller, and what records an action takes it from there (actorOf).
func cliActor(who string) engine.Actor { return engine.Actor{Who: who, Via: "cli"} }

// actorOf is who acts under ctx: the actor it carries, else who writes
// through the Go API (by; "go", the OS user and host, when empty).
func actorOf(ctx context.Context, by string) engine.Actor {
	if a, ok := engine.ActorOf(ctx); ok {
		return a
	}
	if by == "" {
		by = defaultWriter()
	}
	return engine.Actor{Who: by, Via: "go"}
}

// record appends act, made by ctx's actor, to st's actions log.
func (s *Scheduler) record(ctx context.Context, st slotstore.Store, act engine.Act) {
	engine.RecordAction(ctx, st, s.log, s.cfg.actionsRetain(), actorOf(ctx, ""), act)
}

// actStore is the store a trigger or backfill that answered err acted on:
// the Run's while one is in progress, else opened (the caller's).
func (s *Scheduler) actStore(opened slotstore.Store) slotstore.Store {
	if opened != nil {
		return opened
	}
	if p := s.runStore.Load(); p != nil {
		return *p
	}
	return s.store
}

// triggerAct is what a trigger of job that answered res and err did.
func triggerAct(job string, res TriggerResult, err error) engine.Act {
	act := engine.Act{Kind: "trigger", Target: job, Err: err}
	if !res.Slot.IsZero() {
		act.Detail = fmt.Sprintf("slot %s, fence %d, ended %s", res.Slot.UTC().Format(time.RFC3339), res.Fence, res.End)
	}
	return act
}

// backfillAct is what a backfill of job over p that answered res and err
// did.
func backfillAct(job string, p BackfillParams, res BackfillResult, err error) engine.Act {
	return engine.Act{Kind: "backfill", Target: job, Err: err,
		Detail: fmt.Sprintf("from %s to %s: %d slots to run of %d", p.From.UTC().Format(time.RFC3339),
			p.To.UTC().Format(time.RFC3339), res.ToRun(), len(res.Slots))}
}

// record appends act to s's store's actions log, made by ctx's actor (the
// CLI's user, the HTTP API's caller), else by s's writer through the Go
// API.
func (s *Schedules) record(ctx context.Context, act engine.Act) {
	a := actorOf(ctx, s.by)
	log := s.log
	if log == nil {
		log = slog.Default()
	}
	engine.RecordAction(ctx, s.st, log, s.cfg.actionsRetain(), a, act)
}

// recordWrites records one batch of schedule writes that answered res and
// err: a write of one schedule as an action on it, a batch of several (a
// PutAll) as one action that names how many and the first and last IDs,
// so that writing a million schedules does not append a million entries.
func (s *Schedules) recordWrites(ctx context.Context, create bool, ws []slotstore.ScheduleWrite, res []slotstore.ScheduleResult, err error) {
	kind := map[bool]string{true: "schedule-create", false: "schedule-put"}[create]
	if len(ws) == 1 {
		act := engine.Act{Kind: kind, Target: ws[0].ID, Err: err}
		if err == nil && len(res) == 1 {
			if act.Err = res[0].Err; act.Err == nil {
				act.Detail = fmt.Sprintf("version %d, runs %s", res[0].Entry.Version, ws[0].Run)
			}
		}
		s.record(ctx, act)
		return
	}
	refused := 0
	for _, r := range res {
		if r.Err != nil {
			refused++
		}
	}
	if err == nil && refused > 0 {
		err = fmt.Errorf("%d of %d refused", refused, len(ws))
	}
	s.record(ctx, engine.Act{Kind: kind, Err: err,
		Detail: fmt.Sprintf("%d schedules, %s to %s; %d refused", len(ws), ws[0].ID, ws[len(ws)-1].ID, refused)})
}

// httpSchedules is the schedules of st as the HTTP API writes them: their
// failed records logged with the replica's lines.
func (s *Scheduler) httpSchedules(st slotstore.Store) *Schedules {
	sc := NewSchedules(st, s.cfg, s.reg).By("http")
	sc.log = s.log
	return sc
}
