// Package fakedriver is a driver.Driver kept in one process's memory, for
// the tests of package leader/driver and of the leadertest suite itself. It reads
// time.Now, so it works inside testing/synctest bubbles, and each Driver
// of a Store can be stalled on its own, as a partitioned replica would be.
package fakedriver

import (
	"context"
	"sync"
	"time"

	"github.com/slotcron/slotcron/leader/driver"
)

// Store holds the leases that its Drivers share.
type Store struct {
	mu      sync.Mutex
	leases  map[string]lease
	fences  map[string]int64
	waiters map[string]map[*session]bool // subscribed sessions, by name
}

type lease struct {
	holder  string
	fence   int64
	expires time.Time
}

// New returns an empty store.
func New() *Store {
	return &Store{leases: map[string]lease{}, fences: map[string]int64{}, waiters: map[string]map[*session]bool{}}
}

// Driver returns a new driver on s: one replica's link to the store.
func (s *Store) Driver() *Driver { return &Driver{s: s, stalled: make(chan struct{})} }

// Revoke forgets name's lease, as a store that lost its data would.
func (s *Store) Revoke(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, name)
}

// Expires returns when name's lease ends, and whether it has one.
func (s *Store) Expires(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[name]
	return l.expires, ok
}

// Driver is one replica's link to a Store.
type Driver struct {
	s       *Store
	once    sync.Once
	stalled chan struct{} // closed by Stall
}

var _ driver.Driver = (*Driver)(nil)

// Stall makes every call of d's sessions, from now on and those under way,
// block until its context ends.
func (d *Driver) Stall() { d.once.Do(func() { close(d.stalled) }) }

// Open implements driver.Driver.
func (d *Driver) Open(ctx context.Context, name, holder string) (driver.Session, error) {
	if err := d.gate(ctx); err != nil {
		return nil, err
	}
	// Subscribe at once, as the real backends do, so that a release
	// between a held Acquire and the next Wait is not missed.
	s := &session{d: d, name: name, holder: holder, released: make(chan struct{}, 1)}
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	if d.s.waiters[name] == nil {
		d.s.waiters[name] = map[*session]bool{}
	}
	d.s.waiters[name][s] = true
	return s, nil
}

// gate blocks a stalled driver's call until ctx ends.
func (d *Driver) gate(ctx context.Context) error {
	select {
	case <-d.stalled:
		<-ctx.Done()
		return ctx.Err()
	default:
		return nil
	}
}
