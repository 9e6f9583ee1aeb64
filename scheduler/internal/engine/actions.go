// The actions log as slotcron writes it: after each mutation, whatever its
// outcome, who made it, in which role and how, what it did to what, and
// why, appended to the store (slotstore.Action).

package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// DefaultActionsHistory is how long the store keeps an entry of the actions
// log unless the configuration's actions_history says otherwise.
const DefaultActionsHistory = 90 * 24 * time.Hour

// Actor is who makes a mutation: a token's name and role through the HTTP
// API, "cli user@host" through the CLI, the Go API's writer, or slotcron
// itself. Via is http, cli, go or slotcron.
type Actor struct {
	Who, Role, Via string
}

// Slotcron is slotcron acting on its own: a pause after failures, a
// configuration revision taking effect.
var Slotcron = Actor{Who: "slotcron", Via: "slotcron"}

// Act is one mutation, to record: Kind (pause, resume, trigger, backfill,
// schedule-put...), the job or schedule it acted on (empty: the cluster),
// why, what else identifies it, and its outcome (nil: "ok").
type Act struct {
	Kind, Target, Reason, Detail string
	Err                          error
}

// RecordAction appends act, made by a, to st's actions log, kept for retain
// (DefaultActionsHistory when not positive). The mutation has happened (or
// failed) already: an append that fails is logged at WARN and changes
// nothing else. Text is cut to what the store keeps.
func RecordAction(ctx context.Context, st slotstore.Store, log *slog.Logger, retain time.Duration, a Actor, act Act) {
	if retain <= 0 {
		retain = DefaultActionsHistory
	}
	result := "ok"
	if act.Err != nil {
		result = act.Err.Error()
	}
	entry := slotstore.Action{Who: fitText(a.Who, 200), Role: fitText(a.Role, 32), Via: fitText(a.Via, 32), Kind: fitText(act.Kind, 64),
		Target: fitText(act.Target, 300), Reason: fitText(act.Reason, 1000), Result: fitText(result, 1000), Detail: fitText(act.Detail, 1000),
		Retain: retain}
	if entry.Who == "" {
		entry.Who = "unknown"
	}
	// Recorded even when the caller's context has ended: the mutation it
	// bounded has happened.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxStoreWait)
	defer cancel()
	if _, err := st.AppendAction(rctx, entry); err != nil && log != nil {
		log.Warn("recording an action failed", "kind", entry.Kind, "target", entry.Target, "who", entry.Who,
			"result", entry.Result, "err", err)
	}
}

// Actions lists the actions log of the Run's store.
func (r Records) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	return r.st.Actions(ctx, p)
}

// Record appends act, made by a, to the actions log of the Run's store,
// kept as the configuration says.
func (r Records) Record(ctx context.Context, a Actor, act Act) {
	RecordAction(ctx, r.st, r.l.s.log, r.l.s.actionsRetain, a, act)
}

type actorKey struct{}

// WithActor returns ctx carrying a, who acts under it: what a store write
// made with ctx records in the actions log as its author.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns the actor ctx carries, if any.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}
