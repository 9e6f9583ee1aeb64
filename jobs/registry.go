package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Func is the body of a job. It runs on exactly one replica per slot claim;
// it should honour ctx and return nil on success. A non-nil error records the
// run as failed.
type Func func(ctx context.Context, run Run) error

// ErrDuplicate is returned by RegisterSafely and RegisterDutySafely for a
// name already registered (jobs and duties have separate name spaces).
var ErrDuplicate = errors.New("jobs: duplicate name")

// ErrEmptyName is returned by RegisterSafely and RegisterDutySafely for an
// empty name. A nil function is an error too, but not this one.
var ErrEmptyName = errors.New("jobs: empty name")

// Registry binds job names to functions, and duty names to DutyFuncs; the
// two name spaces are separate. It is safe for concurrent use; the
// zero value is not usable, call NewRegistry.
type Registry struct {
	mu     sync.RWMutex
	funcs  map[string]Func
	duties map[string]DutyFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{funcs: make(map[string]Func)}
}

// Register binds name to fn. It panics on an empty name, a nil fn or a name
// already registered: registration is static set-up, and a mistake there
// should stop the program before it schedules anything.
func (r *Registry) Register(name string, fn Func) {
	if err := r.RegisterSafely(name, fn); err != nil {
		panic(err)
	}
}

// RegisterSafely binds name to fn and reports a bad or duplicate name as an
// error instead of panicking.
func (r *Registry) RegisterSafely(name string, fn Func) error {
	if name == "" {
		return ErrEmptyName
	}
	if fn == nil {
		return fmt.Errorf("jobs: register %q: nil Func", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.funcs[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	r.funcs[name] = fn
	return nil
}

// Lookup returns the function registered under name.
func (r *Registry) Lookup(name string) (Func, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.funcs[name]
	return fn, ok
}

// Names lists the registered names in sorted order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.funcs))
	for name := range r.funcs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
