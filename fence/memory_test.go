package fence_test

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testlog"
)

func TestMemoryCheck(t *testing.T) {
	var m fence.Memory
	steps := []struct {
		token   int64
		highest int64 // 0: accepted
	}{
		{5, 0}, {5, 0}, {7, 0}, {6, 7}, {1, 7}, {8, 0},
	}
	for _, s := range steps {
		err := m.Check(t.Context(), "invoices", s.token)
		if s.highest == 0 {
			if err != nil {
				t.Fatalf("check fence %d: %v", s.token, err)
			}
			continue
		}
		wantStale(t, err, "invoices", s.token, s.highest)
	}
	// Resources are independent.
	if err := m.Check(t.Context(), "other", 1); err != nil {
		t.Fatalf("other resource: %v", err)
	}
}

func TestMemorySetGet(t *testing.T) {
	var m fence.Memory
	ctx := t.Context()
	if _, f, err := m.Get(ctx, "k"); !errors.Is(err, fence.ErrNotFound) || f != 0 {
		t.Fatalf("get of nothing: fence %d, err %v", f, err)
	}
	if err := m.Set(ctx, "k", 10, []byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, m.Set(ctx, "k", 9, []byte("stale"), 0), "k", 9, 10)
	v, f, err := m.Get(ctx, "k")
	if err != nil || string(v) != "a" || f != 10 {
		t.Fatalf("get = %q, %d, %v; want a, 10", v, f, err)
	}
	if err := m.Set(ctx, "k", 10, []byte("again"), 0); err != nil {
		t.Fatalf("equal fence: %v", err)
	}
	v, _, _ = m.Get(ctx, "k")
	if string(v) != "again" {
		t.Fatalf("after equal fence, value %q", v)
	}
}

func TestMemoryTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m fence.Memory
		if err := m.Set(t.Context(), "k", 3, []byte("v"), time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(999 * time.Millisecond)
		if _, _, err := m.Get(t.Context(), "k"); err != nil {
			t.Fatalf("before the TTL: %v", err)
		}
		time.Sleep(time.Millisecond)
		_, f, err := m.Get(t.Context(), "k")
		if !errors.Is(err, fence.ErrNotFound) || f != 3 {
			t.Fatalf("after the TTL: fence %d, err %v; want 3 and ErrNotFound", f, err)
		}
		// The fence outlives the value.
		wantStale(t, m.Set(t.Context(), "k", 2, nil, 0), "k", 2, 3)
	})
}

func TestInvalid(t *testing.T) {
	var m fence.Memory
	ctx := t.Context()
	for name, err := range map[string]error{
		"empty resource": m.Check(ctx, "", 1),
		"zero fence":     m.Check(ctx, "r", 0),
		"negative fence": m.Set(ctx, "r", -1, nil, 0),
		"negative ttl":   m.Set(ctx, "r", 1, nil, -time.Second),
		"empty key":      func() error { _, _, err := m.Get(ctx, ""); return err }(),
	} {
		if !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestRejectionObserved(t *testing.T) {
	var l testlog.Buffer
	m := fence.Memory{Logger: slog.New(slog.NewJSONHandler(&l, nil))}
	res := unique("observed")
	if err := m.Check(t.Context(), res, 4); err != nil {
		t.Fatal(err)
	}
	before := rejected(t, res)
	for range 2 {
		wantStale(t, m.Check(t.Context(), res, 3), res, 3, 4)
	}
	if got := rejected(t, res) - before; got != 2 {
		t.Errorf("slotcron_fence_rejections_total{resource=%q} grew by %v, want 2", res, got)
	}
	recs := l.Logged(t, "fence rejected")
	if len(recs) != 2 {
		t.Fatalf("%d lines with msg=\"fence rejected\", want 2", len(recs))
	}
	r := recs[0]
	if r["level"] != "WARN" || r["resource"] != res || r["fence"] != 3.0 || r["highest"] != 4.0 {
		t.Errorf("log line %v, want level WARN, resource %q, fence 3, highest 4", r, res)
	}
}
