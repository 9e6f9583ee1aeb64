package jobs

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/slotstore"
)

// KeyLayout is the time layout of the slot part of a run key.
const KeyLayout = time.RFC3339

// Run describes one execution of a job for one slot. The scheduler fills it;
// tests of a job may build one with a struct literal, WithParams and
// WithStore.
type Run struct {
	// Job is the name declared in YAML.
	Job string
	// Slot is the nominal instant of the occurrence, in UTC, to the second.
	// For a backfilled run it is the scheduled slot that never ran, long
	// past. A manual run (a trigger) has a slot of its own, never one of
	// the schedule's: the current second when the trigger claims it, or the
	// first later second that is neither a scheduled slot nor another
	// trigger's, so a manual run may start before its Slot (a negative
	// dispatch delay); its Key is as unique as a scheduled run's.
	Slot time.Time
	// Fence is greater than every fence issued earlier for this job. Pass it
	// to the resource the job writes to so a stale holder's writes are
	// rejected.
	Fence int64
	// Attempt counts claims of this slot: 1 for the first, 2 after a
	// takeover, and so on.
	Attempt int
	// Replica names the replica running this attempt.
	Replica string

	params []byte // the job's YAML params, re-encoded; nil when none
	logger *slog.Logger
	store  slotstore.Store // where the slot was claimed; nil when not set
}

// Key returns the run key, job@RFC3339: the same on every replica and for
// every attempt of the slot, so it serves as an idempotency key.
func (r Run) Key() string {
	return r.Job + "@" + slotText(r.Slot)
}

// WithParams returns a copy of r whose Params decode the given YAML document.
func (r Run) WithParams(yamlDoc []byte) Run {
	r.params = yamlDoc
	return r
}

// WithLogger returns a copy of r whose Logger is l with the run's attributes.
func (r Run) WithLogger(l *slog.Logger) Run {
	r.logger = l
	return r
}

// WithStore returns a copy of r that carries st, the store its slot was
// claimed from. The scheduler sets it on every Run it hands a job.
func (r Run) WithStore(st slotstore.Store) Run {
	r.store = st
	return r
}

// Store returns the store the run's slot was claimed from, or nil for a
// Run built without WithStore. It is there for helpers that complete the
// slot in the job's own transaction (pgstore.CompleteTx), which must know
// where the slot's marker lives. A job must not renew, finish or release
// its slot through it: the scheduler does, and holds the lease.
func (r Run) Store() slotstore.Store { return r.store }

// Params decodes the job's YAML params into v, a pointer to a struct or a
// map. Keys that v does not have are an error, so a misspelt parameter is
// caught rather than silently ignored. With no params, v is left unchanged.
func (r Run) Params(v any) error {
	if len(r.params) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(r.params))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("jobs: params of job %q: %w", r.Job, err)
	}
	return nil
}

// Logger returns a logger with job, slot, fence, attempt and replica
// attached. It never returns nil.
func (r Run) Logger() *slog.Logger {
	l := r.logger
	if l == nil {
		l = slog.Default()
	}
	return l.With(r.Attrs()...)
}

// Attrs returns the run's identifying attributes in the order logs use.
func (r Run) Attrs() []any {
	a := r.LogAttrs()
	return []any{a[0], a[1], a[2], a[3], a[4]}
}

// LogAttrs returns the attributes of Attrs as an array, for
// slog.Logger.LogAttrs: a line that writes them this way allocates nothing
// for them, where Attrs boxes each and Logger builds a handler.
func (r Run) LogAttrs() [5]slog.Attr {
	return [5]slog.Attr{
		slog.String("job", r.Job),
		slog.String("slot", slotText(r.Slot)),
		slog.Int64("fence", r.Fence),
		slog.Int("attempt", r.Attempt),
		slog.String("replica", r.Replica),
	}
}

// lastSlot is the slot slotText formatted last: the runs of a burst share
// their second, and formatting it is most of what a run's attributes cost.
var lastSlot atomic.Pointer[formattedSlot]

type formattedSlot struct {
	at   time.Time
	text string
}

// slotText is t.UTC().Format(KeyLayout).
func slotText(t time.Time) string {
	if f := lastSlot.Load(); f != nil && f.at.Equal(t) {
		return f.text
	}
	f := &formattedSlot{at: t, text: t.UTC().Format(KeyLayout)}
	lastSlot.Store(f)
	return f.text
}
