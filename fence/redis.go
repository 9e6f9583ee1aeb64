package fence

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every key of Redis when Redis.Prefix is empty.
const DefaultPrefix = "slotcron:fence:"

var (
	//go:embed scripts/set.lua
	setSrc string
	//go:embed scripts/get.lua
	getSrc string

	setScript = redis.NewScript(setSrc)
	getScript = redis.NewScript(getSrc)
)

// Redis is a fenced key-value resource in Redis: Set stores a value only if
// its fence is at least the highest the key has seen, in one Lua script, so
// the check and the write are one atomic step. Each key is one hash,
// <Prefix><key>, holding the value, its expiry and the highest fence, so it
// works unchanged on a Redis Cluster. SetOnce also records, in the same
// script and the same hash slot, that a slot wrote the key, and refuses a
// second write of it for that slot.
//
// The hash never expires, whatever the TTL of its value: the highest fence
// must outlive every holder. A Redis without persistence that restarts
// forgets it, and a stale holder may then write once more; fence resources
// that must survive that on a store that persists, or in PostgreSQL (PG).
//
// Redis is a value with no state of its own, safe for concurrent use.
type Redis struct {
	// Client runs the scripts: a *redis.Client, *redis.ClusterClient or
	// any redis.UniversalClient. Required.
	Client redis.Scripter
	// Prefix starts every key. Empty means DefaultPrefix.
	Prefix string
	// Logger receives a line for each rejection and each refused repeat.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Retain is how long SetOnce keeps the record of a slot's write, at
	// least, counted from the later of the write and the slot, by Redis's
	// clock. Set it to at least the job's history. Zero means
	// DefaultRetain (7 days); a negative value is an error (ErrInvalid).
	Retain time.Duration
}

// Set stores value under key if token is at least the highest fence key has
// seen, and records token as the highest. Otherwise it changes nothing and
// returns a *StaleError wrapping ErrStale. A positive ttl makes the value
// expire after ttl by Redis's clock (the fence record stays); zero keeps it
// until replaced.
//
// A retried Set (go-redis retries on network errors) is harmless: an equal
// fence is accepted and writes the same value.
func (r Redis) Set(ctx context.Context, key string, token int64, value []byte, ttl time.Duration) error {
	if err := validate(key, token); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("%w: key %q: negative TTL %v", ErrInvalid, key, ttl)
	}
	ms := ttl.Milliseconds()
	if ttl > 0 && ms == 0 {
		ms = 1
	}
	res, err := setScript.Run(ctx, r.Client, []string{r.key(key)}, strconv.FormatInt(token, 10), value, ms).Slice()
	if err != nil {
		return fmt.Errorf("fence: set %q fence %d: %w", key, token, err)
	}
	ok, fence, err := reply(res)
	if err != nil {
		return fmt.Errorf("fence: set %q fence %d: %w", key, token, err)
	}
	if !ok {
		return reject(r.Logger, key, token, fence)
	}
	return nil
}

// Get returns the value of key and the highest fence key has seen. When key
// has no live value the error wraps ErrNotFound, and fence is still the
// highest seen (0 if none).
func (r Redis) Get(ctx context.Context, key string) (value []byte, fence int64, err error) {
	if key == "" {
		return nil, 0, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	res, err := getScript.Run(ctx, r.Client, []string{r.key(key)}).Slice()
	if err != nil {
		return nil, 0, fmt.Errorf("fence: get %q: %w", key, err)
	}
	if len(res) != 3 {
		return nil, 0, fmt.Errorf("fence: get %q: unexpected reply %v", key, res)
	}
	found, fence, err := reply([]any{res[0], res[2]})
	if err != nil {
		return nil, 0, fmt.Errorf("fence: get %q: %w", key, err)
	}
	if !found {
		return nil, fence, fmt.Errorf("fence: get %q: %w", key, ErrNotFound)
	}
	s, _ := res[1].(string)
	return []byte(s), fence, nil
}

func (r Redis) key(key string) string {
	if r.Prefix == "" {
		return DefaultPrefix + key
	}
	return r.Prefix + key
}

// reply reads {flag, fence}, fence a decimal string, empty for none.
func reply(res []any) (bool, int64, error) {
	if len(res) != 2 {
		return false, 0, fmt.Errorf("unexpected reply %v", res)
	}
	flag, ok := res[0].(int64)
	if !ok {
		return false, 0, fmt.Errorf("unexpected reply %v", res)
	}
	f, err := parseFence(res[1])
	if err != nil {
		return false, 0, err
	}
	return flag == 1, f, nil
}

// parseFence reads a fence a script returned: a decimal string, empty for
// none (0).
func parseFence(v any) (int64, error) {
	text, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("unexpected fence %v", v)
	}
	if text == "" {
		return 0, nil
	}
	f, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected fence %q", text)
	}
	return f, nil
}
