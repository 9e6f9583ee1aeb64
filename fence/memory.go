package fence

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slotcron/slotcron/jobs"
)

// KV is a fenced key-value resource: Redis and *Memory implement it, so
// code that writes fenced values can be tested against Memory.
type KV interface {
	// Set stores value under key if token is at least the highest fence
	// key has seen; otherwise it returns a *StaleError wrapping ErrStale.
	// A positive ttl makes the value expire; the fence record stays.
	Set(ctx context.Context, key string, token int64, value []byte, ttl time.Duration) error
	// SetOnce stores value under key as Set does, at most once per slot:
	// a later SetOnce of key for run's slot returns an *AppliedError
	// wrapping ErrApplied (see Redis.SetOnce).
	SetOnce(ctx context.Context, key string, run jobs.Run, value []byte, ttl time.Duration) error
	// Get returns the live value of key and the highest fence it has
	// seen, or an error wrapping ErrNotFound (fence still the highest).
	Get(ctx context.Context, key string) (value []byte, fence int64, err error)
}

var (
	_ KV = Redis{}
	_ KV = (*Memory)(nil)
)

// Memory is a fenced resource in the memory of one process: the highest
// fence per resource name, optionally a value per name, and the records of
// SetOnce. It is for tests and for a single process; it fences nothing
// shared between processes. Its zero value is ready to use; it is safe for
// concurrent use and must not be copied after first use.
type Memory struct {
	// Logger receives a line for each rejection and each refused repeat.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Retain is how long SetOnce keeps the record of a slot's write, on
	// this process's clock. Zero means DefaultRetain; a negative value is
	// an error (ErrInvalid).
	Retain time.Duration

	mu      sync.Mutex
	highest map[string]int64
	values  map[string]memValue
	once    memOnce
}

type memValue struct {
	data    []byte
	expires time.Time // zero: never
}

// Check records token as the highest fence seen for resource, or returns a
// *StaleError wrapping ErrStale when resource has seen a higher one. An
// equal fence is accepted. It is the in-memory twin of PG.Check.
func (m *Memory) Check(ctx context.Context, resource string, token int64) error {
	if err := validate(resource, token); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked(resource, token)
}

func (m *Memory) checkLocked(resource string, token int64) error {
	if h := m.highest[resource]; token < h {
		return reject(m.Logger, resource, token, h)
	}
	if m.highest == nil {
		m.highest = make(map[string]int64)
	}
	m.highest[resource] = token
	return nil
}

// Set implements KV. The TTL runs on this process's clock.
func (m *Memory) Set(ctx context.Context, key string, token int64, value []byte, ttl time.Duration) error {
	if err := validate(key, token); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("%w: key %q: negative TTL %v", ErrInvalid, key, ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setLocked(key, token, value, ttl)
}

func (m *Memory) setLocked(key string, token int64, value []byte, ttl time.Duration) error {
	if err := m.checkLocked(key, token); err != nil {
		return err
	}
	v := memValue{data: append([]byte(nil), value...)}
	if ttl > 0 {
		v.expires = time.Now().Add(ttl)
	}
	if m.values == nil {
		m.values = make(map[string]memValue)
	}
	m.values[key] = v
	return nil
}

// Get implements KV.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, int64, error) {
	if key == "" {
		return nil, 0, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.highest[key]
	v, ok := m.values[key]
	if !ok || (!v.expires.IsZero() && !time.Now().Before(v.expires)) {
		return nil, h, fmt.Errorf("fence: get %q: %w", key, ErrNotFound)
	}
	return append([]byte(nil), v.data...), h, nil
}
