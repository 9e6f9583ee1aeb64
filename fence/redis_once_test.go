package fence_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
)

// recordKey is the documented name of SetOnce's record for a key without
// a hash tag of its own.
func recordKey(r fence.Redis, key, runKey string) string {
	return "{" + r.Prefix + key + "}:once:" + runKey
}

func TestRedisSetOnce(t *testing.T) {
	r, c := redisFence(t)
	var l testlog.Buffer
	r.Logger = slog.New(slog.NewJSONHandler(&l, nil))
	ctx := t.Context()
	key := unique("invoice")
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	first := runOf("invoices", slot, 17, 1)
	rejectedBefore, repeatedBefore := rejected(t, key), repeated(t, key)

	if err := r.SetOnce(ctx, key, first, []byte("by attempt 1"), 0); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	// The holder died before the slot was recorded finished; attempt 2
	// writes again with a higher fence, and the retry of attempt 1.
	wantApplied(t, r.SetOnce(ctx, key, runOf("invoices", slot, 18, 2), []byte("by attempt 2"), 0), key, first.Key(), 18, 17)
	wantApplied(t, r.SetOnce(ctx, key, first, []byte("by attempt 1, again"), 0), key, first.Key(), 17, 17)
	v, f, err := r.Get(ctx, key)
	if err != nil || string(v) != "by attempt 1" || f != 17 {
		t.Fatalf("get = %q, fence %d, %v; want attempt 1's value, fence 17", v, f, err)
	}
	if n := c.Exists(ctx, recordKey(r, key, first.Key())).Val(); n != 1 {
		t.Fatalf("the record %s is missing", recordKey(r, key, first.Key()))
	}

	// The next slot writes the key afresh; a stale holder of it, after the
	// newer holder wrote, is refused as applied and stale.
	next := runOf("invoices", slot.Add(time.Hour), 20, 1)
	if err := r.SetOnce(ctx, key, next, []byte("next slot"), 0); err != nil {
		t.Fatalf("next slot: %v", err)
	}
	wantApplied(t, r.SetOnce(ctx, key, runOf("invoices", next.Slot, 19, 1), []byte("stale"), 0), key, next.Key(), 19, 20)

	// A slot with no record, whose fence is below one the key has seen
	// since, is stale only: the key holds a newer slot's value.
	err = r.SetOnce(ctx, key, runOf("invoices", slot.Add(-time.Hour), 16, 1), []byte("older slot"), 0)
	wantStale(t, err, key, 16, 20)
	if errors.Is(err, fence.ErrApplied) {
		t.Fatalf("an older slot's first write is reported applied: %v", err)
	}
	if v, f, _ := r.Get(ctx, key); string(v) != "next slot" || f != 20 {
		t.Fatalf("get = %q, fence %d; want the next slot's value, fence 20", v, f)
	}

	if got := repeated(t, key) - repeatedBefore; got != 2 {
		t.Errorf("slotcron_fence_repeats_total{resource=%q} grew by %v, want 2", key, got)
	}
	if got := rejected(t, key) - rejectedBefore; got != 2 {
		t.Errorf("slotcron_fence_rejections_total{resource=%q} grew by %v, want 2", key, got)
	}
	if recs := l.Logged(t, "effect already applied"); len(recs) != 2 || recs[1]["run"] != first.Key() || recs[1]["applied"] != 17.0 {
		t.Errorf("repeat log lines %v, want two for %s, applied 17", recs, first.Key())
	}
}

// Each key has its own record: a job writing two keys per slot writes
// each once, and a successor completes what its predecessor left half
// done.
func TestRedisSetOnceKeysApart(t *testing.T) {
	r, _ := redisFence(t)
	ctx := t.Context()
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := r.SetOnce(ctx, "a", runOf("j", slot, 1, 1), []byte("a1"), 0); err != nil {
		t.Fatal(err)
	}
	// The holder died before writing b; attempt 2 writes both.
	second := runOf("j", slot, 2, 2)
	wantApplied(t, r.SetOnce(ctx, "a", second, []byte("a2"), 0), "a", second.Key(), 2, 1)
	if err := r.SetOnce(ctx, "b", second, []byte("b2"), 0); err != nil {
		t.Fatalf("b, left unwritten by attempt 1: %v", err)
	}
	for key, want := range map[string]string{"a": "a1", "b": "b2"} {
		if v, _, err := r.Get(ctx, key); err != nil || string(v) != want {
			t.Errorf("get %s = %q, %v; want %q", key, v, err, want)
		}
	}
}

// Two holders of one slot, a stale one and a fresh one, write at the same
// moment, again and again: each time exactly one value is stored.
func TestRedisSetOnceConcurrentHolders(t *testing.T) {
	r, _ := redisFence(t)
	ctx := t.Context()
	slot := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 200 {
		key := "k" + strconv.Itoa(i)
		holders := []int64{1, 2}
		errs := make([]error, len(holders))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for h, token := range holders {
			wg.Go(func() {
				<-start
				errs[h] = r.SetOnce(ctx, key, runOf("j", slot, token, int(token)), []byte(strconv.FormatInt(token, 10)), 0)
			})
		}
		close(start)
		wg.Wait()
		var won int64
		for h, err := range errs {
			switch {
			case err == nil:
				won = holders[h]
			case !errors.Is(err, fence.ErrApplied) && !errors.Is(err, fence.ErrStale):
				t.Fatalf("round %d, fence %d: %v", i, holders[h], err)
			}
		}
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: errors %v, want exactly one write stored", i, errs)
		}
		if v, _, err := r.Get(ctx, key); err != nil || string(v) != strconv.FormatInt(won, 10) {
			t.Fatalf("round %d: get = %q, %v; want the value of fence %d", i, v, err, won)
		}
	}
}

func TestRedisSetOnceRetention(t *testing.T) {
	r, c := redisFence(t)
	ctx := t.Context()

	// By default a record lasts DefaultRetain after the later of the
	// write and the slot.
	past := runOf("j", time.Now().Add(-time.Hour), 1, 1)
	if err := r.SetOnce(ctx, "past", past, nil, 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, recordKey(r, "past", past.Key())).Val(); ttl <= fence.DefaultRetain-time.Minute || ttl > fence.DefaultRetain {
		t.Errorf("PTTL of a past slot's record %v, want about %v", ttl, fence.DefaultRetain)
	}
	future := runOf("j", time.Now().Add(48*time.Hour), 1, 1)
	if err := r.SetOnce(ctx, "future", future, nil, 0); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, recordKey(r, "future", future.Key())).Val(); ttl <= fence.DefaultRetain+47*time.Hour || ttl > fence.DefaultRetain+48*time.Hour {
		t.Errorf("PTTL of a future slot's record %v, want about 48h more than %v", ttl, fence.DefaultRetain)
	}

	// A value whose TTL passes leaves its record: a repeat is still refused.
	run := runOf("j", time.Now(), 5, 1)
	if err := r.SetOnce(ctx, "short", run, []byte("v"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the value's TTL to pass", func() error {
		if _, _, err := r.Get(ctx, "short"); !errors.Is(err, fence.ErrNotFound) {
			return fmt.Errorf("Get: %v, want ErrNotFound", err)
		}
		return nil
	})
	wantApplied(t, r.SetOnce(ctx, "short", runOf("j", run.Slot, 6, 2), []byte("again"), 0), "short", run.Key(), 6, 5)

	// After the retention, Redis drops the record.
	brief := r
	brief.Retain = 50 * time.Millisecond
	if err := brief.SetOnce(ctx, "brief", run, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	record := recordKey(r, "brief", run.Key())
	if ttl := c.PTTL(ctx, record).Val(); ttl <= 0 || ttl > 50*time.Millisecond {
		t.Fatalf("PTTL of the record %v, want at most 50ms", ttl)
	}
	poll.Until(t, 10*time.Second, "the record's retention to pass", func() error {
		if c.Exists(ctx, record).Val() != 0 {
			return errors.New("the record is still there")
		}
		return nil
	})
	if err := brief.SetOnce(ctx, "brief", runOf("j", run.Slot, 6, 2), []byte("after"), 0); err != nil {
		t.Fatalf("the slot after its record expired: %v", err)
	}
}

func TestRedisSetOnceInvalid(t *testing.T) {
	r := fence.Redis{} // never reaches a server
	ctx := t.Context()
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, err := range map[string]error{
		"empty key":          r.SetOnce(ctx, "", runOf("j", slot, 1, 1), nil, 0),
		"empty job":          r.SetOnce(ctx, "k", runOf("", slot, 1, 1), nil, 0),
		"zero slot":          r.SetOnce(ctx, "k", runOf("j", time.Time{}, 1, 1), nil, 0),
		"zero fence":         r.SetOnce(ctx, "k", runOf("j", slot, 0, 1), nil, 0),
		"negative ttl":       r.SetOnce(ctx, "k", runOf("j", slot, 1, 1), nil, -1),
		"negative retention": fence.Redis{Retain: -1}.SetOnce(ctx, "k", runOf("j", slot, 1, 1), nil, 0),
		"brace, no tag":      r.SetOnce(ctx, "a}b", runOf("j", slot, 1, 1), nil, 0),
		"empty tag":          r.SetOnce(ctx, "a{}b", runOf("j", slot, 1, 1), nil, 0),
	} {
		if !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// The key's hash and its record share a hash slot, whatever braces the
// key and the prefix have, so SetOnce works on a Cluster.
func TestRedisSetOnceCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), DisableIdentity: true})
	defer cc.Close()
	ctx := t.Context()
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, prefix := range []string{unique("cluster") + ":", "{" + unique("tagged") + "}:"} {
		r := fence.Redis{Client: cc, Prefix: prefix, Logger: slog.New(slog.DiscardHandler)}
		for i := range 10 {
			for _, key := range []string{fmt.Sprintf("k%d", i), fmt.Sprintf("k{%d}", i), fmt.Sprintf("k{%d", i)} {
				if err := r.SetOnce(ctx, key, runOf("j", slot, 10, 1), []byte(key), 0); err != nil {
					t.Fatalf("prefix %q, key %q: %v", prefix, key, err)
				}
				wantApplied(t, r.SetOnce(ctx, key, runOf("j", slot, 11, 2), nil, 0), key, runOf("j", slot, 1, 1).Key(), 11, 10)
				if v, f, err := r.Get(ctx, key); err != nil || string(v) != key || f != 10 {
					t.Fatalf("get %s = %q, %d, %v", key, v, f, err)
				}
			}
		}
	}
}
