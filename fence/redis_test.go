package fence_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
)

// redisFence returns a fence.Redis on a private server with a prefix of its
// own.
func redisFence(t testing.TB) (fence.Redis, *redis.Client) {
	t.Helper()
	srv := testserver.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return fence.Redis{Client: c, Prefix: unique("t") + ":", Logger: slog.New(slog.DiscardHandler)}, c
}

func TestRedisSetGet(t *testing.T) {
	r, _ := redisFence(t)
	ctx := t.Context()
	if _, f, err := r.Get(ctx, "report"); !errors.Is(err, fence.ErrNotFound) || f != 0 {
		t.Fatalf("get of nothing: fence %d, err %v", f, err)
	}
	if err := r.Set(ctx, "report", 100, []byte("by 100"), 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "report", 100, []byte("by 100 again"), 0); err != nil {
		t.Fatalf("equal fence: %v", err)
	}
	wantStale(t, r.Set(ctx, "report", 99, []byte("by 99"), 0), "report", 99, 100)
	v, f, err := r.Get(ctx, "report")
	if err != nil || string(v) != "by 100 again" || f != 100 {
		t.Fatalf("get = %q, %d, %v; want %q, 100", v, f, err, "by 100 again")
	}
	if err := r.Set(ctx, "report", 101, []byte{0, 255, '\n'}, 0); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := r.Get(ctx, "report"); string(v) != "\x00\xff\n" {
		t.Fatalf("binary value came back as %q", v)
	}
}

// Fences beyond 2^53 differ by one where a Lua number could not tell them
// apart; the script compares them exactly.
func TestRedisLargeFences(t *testing.T) {
	r, _ := redisFence(t)
	ctx := t.Context()
	hi := int64(1)<<53 + 1
	if err := r.Set(ctx, "k", hi, nil, 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, r.Set(ctx, "k", hi-1, nil, 0), "k", hi-1, hi)
	if err := r.Set(ctx, "k", math.MaxInt64, nil, 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, r.Set(ctx, "k", 999999999999999999, nil, 0), "k", 999999999999999999, math.MaxInt64)
}

func TestRedisTTL(t *testing.T) {
	r, c := redisFence(t)
	ctx := t.Context()
	if err := r.Set(ctx, "k", 7, []byte("v"), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, _, err := r.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("get before the TTL: %q, %v", v, err)
	}
	poll.Until(t, 10*time.Second, "the value's 100ms TTL to pass", func() error {
		_, f, err := r.Get(ctx, "k")
		if !errors.Is(err, fence.ErrNotFound) {
			return fmt.Errorf("Get: %v, want ErrNotFound", err)
		}
		if f != 7 {
			t.Fatalf("fence after the TTL: %d, want 7", f)
		}
		return nil
	})
	// The fence record has no expiry and still rejects a stale holder.
	if ttl := c.PTTL(ctx, r.Prefix+"k").Val(); ttl != -1 {
		t.Errorf("PTTL of the fence record = %v, want none (-1)", ttl)
	}
	wantStale(t, r.Set(ctx, "k", 6, []byte("late"), 0), "k", 6, 7)
	// A set without TTL clears the old expiry.
	if err := r.Set(ctx, "k", 8, []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if v, _, err := r.Get(ctx, "k"); err != nil || string(v) != "kept" {
		t.Fatalf("get after a set without TTL: %q, %v", v, err)
	}
}

// Concurrent writers with fences 1..n: whatever the order they arrive in,
// the value left is the one of the highest fence, and every write that was
// accepted had a fence at least as high as all those accepted before it.
func TestRedisConcurrentWriters(t *testing.T) {
	r, _ := redisFence(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	for f := int64(1); f <= n; f++ {
		wg.Go(func() { errs[f] = r.Set(t.Context(), "shared", f, []byte(strconv.FormatInt(f, 10)), 0) })
	}
	wg.Wait()
	for f, err := range errs[1:] {
		if err != nil && !errors.Is(err, fence.ErrStale) {
			t.Fatalf("fence %d: %v", f+1, err)
		}
	}
	if errs[n] != nil {
		t.Fatalf("the highest fence was rejected: %v", errs[n])
	}
	v, f, err := r.Get(t.Context(), "shared")
	if err != nil || string(v) != strconv.Itoa(n) || f != n {
		t.Fatalf("get = %q, %d, %v; want %d", v, f, err, n)
	}
}

func TestRedisInvalid(t *testing.T) {
	r := fence.Redis{} // never reaches a server
	ctx := t.Context()
	for name, err := range map[string]error{
		"empty key":    r.Set(ctx, "", 1, nil, 0),
		"zero fence":   r.Set(ctx, "k", 0, nil, 0),
		"negative ttl": r.Set(ctx, "k", 1, nil, -1),
		"get empty":    func() error { _, _, err := r.Get(ctx, ""); return err }(),
	} {
		if !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// Each key is one hash, so Set and Get work unchanged on a Cluster, for
// keys in any hash slot.
func TestRedisCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true})
	defer cc.Close()
	r := fence.Redis{Client: cc, Prefix: unique("cluster") + ":", Logger: slog.New(slog.DiscardHandler)}
	ctx := t.Context()
	for i := range 20 {
		key := "k" + strconv.Itoa(i)
		if err := r.Set(ctx, key, 10, []byte(key), 0); err != nil {
			t.Fatalf("set %s: %v", key, err)
		}
		wantStale(t, r.Set(ctx, key, 9, nil, 0), key, 9, 10)
		if v, f, err := r.Get(ctx, key); err != nil || string(v) != key || f != 10 {
			t.Fatalf("get %s = %q, %d, %v", key, v, f, err)
		}
	}
}
