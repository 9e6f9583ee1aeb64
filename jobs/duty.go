package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
)

// DutyFunc is the body of a duty: a long-running singleton responsibility,
// such as owning a websocket fan-out or consuming a stream, held by one
// elected replica at a time. It runs on the leader until it returns or ctx
// is cancelled: leadership lost (the term's lease could not be renewed),
// handed over, or the replica shutting down. It should return promptly once
// ctx is done; writes it makes after that are stale and should carry
// Duty.Fence so the resource can reject them.
type DutyFunc func(ctx context.Context, d Duty) error

// Duty describes one term of leadership of a duty.
type Duty struct {
	// Name is the duty's name declared in YAML.
	Name string
	// Fence is greater than the fence of every earlier term of this duty.
	Fence int64
	// Replica names the leader.
	Replica string

	logger *slog.Logger
}

// WithLogger returns a copy of d whose Logger is l with the duty's
// attributes.
func (d Duty) WithLogger(l *slog.Logger) Duty {
	d.logger = l
	return d
}

// Logger returns a logger with duty, fence and replica attached.
func (d Duty) Logger() *slog.Logger {
	l := d.logger
	if l == nil {
		l = slog.Default()
	}
	return l.With(d.Attrs()...)
}

// Attrs returns the term's identifying attributes.
func (d Duty) Attrs() []any {
	return []any{slog.String("duty", d.Name), slog.Int64("fence", d.Fence), slog.String("replica", d.Replica)}
}

// RegisterDuty binds a duty name to fn. Like Register it panics on an empty
// name, a nil fn or a duty name already registered.
func (r *Registry) RegisterDuty(name string, fn DutyFunc) {
	if err := r.RegisterDutySafely(name, fn); err != nil {
		panic(err)
	}
}

// RegisterDutySafely is RegisterDuty returning the error instead.
func (r *Registry) RegisterDutySafely(name string, fn DutyFunc) error {
	if name == "" {
		return ErrEmptyName
	}
	if fn == nil {
		return fmt.Errorf("jobs: register duty %q: nil DutyFunc", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.duties == nil {
		r.duties = make(map[string]DutyFunc)
	}
	if _, ok := r.duties[name]; ok {
		return fmt.Errorf("%w: duty %q", ErrDuplicate, name)
	}
	r.duties[name] = fn
	return nil
}

// LookupDuty returns the duty registered under name.
func (r *Registry) LookupDuty(name string) (DutyFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.duties[name]
	return fn, ok
}

// DutyNames lists the registered duties in sorted order.
func (r *Registry) DutyNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.duties))
	for name := range r.duties {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
