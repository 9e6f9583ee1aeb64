package fence_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

func TestMemorySetOnce(t *testing.T) {
	m := fence.Memory{Logger: slog.New(slog.DiscardHandler)}
	ctx := t.Context()
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	first := runOf("report", slot, 17, 1)
	if err := m.SetOnce(ctx, "report", first, []byte("by 17"), 0); err != nil {
		t.Fatal(err)
	}
	wantApplied(t, m.SetOnce(ctx, "report", runOf("report", slot, 18, 2), []byte("by 18"), 0), "report", first.Key(), 18, 17)
	next := runOf("report", slot.Add(time.Hour), 20, 1)
	if err := m.SetOnce(ctx, "report", next, []byte("by 20"), 0); err != nil {
		t.Fatal(err)
	}
	wantApplied(t, m.SetOnce(ctx, "report", runOf("report", next.Slot, 19, 1), nil, 0), "report", next.Key(), 19, 20)
	err := m.SetOnce(ctx, "report", runOf("report", slot.Add(-time.Hour), 16, 1), nil, 0)
	if wantStale(t, err, "report", 16, 20); errors.Is(err, fence.ErrApplied) {
		t.Fatalf("an older slot's first write is reported applied: %v", err)
	}
	if v, f, err := m.Get(ctx, "report"); err != nil || string(v) != "by 20" || f != 20 {
		t.Fatalf("get = %q, %d, %v; want by 20", v, f, err)
	}
	// Set and SetOnce share the key's fence.
	wantStale(t, m.Set(ctx, "report", 19, nil, 0), "report", 19, 20)
}

// A record lasts Retain after the later of the write and the slot, on the
// process's clock; expired records are swept as new ones come.
func TestMemorySetOnceRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := fence.Memory{Retain: time.Hour, Logger: slog.New(slog.DiscardHandler)}
		ctx := t.Context()
		run := runOf("j", time.Now().Add(time.Minute), 1, 1) // a slot a minute ahead
		if err := m.SetOnce(ctx, "k", run, nil, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour + time.Minute - time.Nanosecond)
		wantApplied(t, m.SetOnce(ctx, "k", runOf("j", run.Slot, 2, 2), nil, 0), "k", run.Key(), 2, 1)
		time.Sleep(time.Nanosecond)
		if err := m.SetOnce(ctx, "k", runOf("j", run.Slot, 3, 3), nil, 0); err != nil {
			t.Fatalf("after the retention: %v", err)
		}

		d := fence.Memory{Logger: slog.New(slog.DiscardHandler)} // DefaultRetain
		if err := d.SetOnce(ctx, "k", run, nil, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(fence.DefaultRetain) // run.Slot is a minute and an hour behind now
		if err := d.SetOnce(ctx, "k", runOf("j", run.Slot, 2, 2), nil, 0); err != nil {
			t.Fatalf("after DefaultRetain: %v", err)
		}
		// Thousands of records later, several sweeps of the expired ones
		// have run, and the live ones still refuse a repeat.
		for i := range 5000 {
			r := runOf("j", time.Now().Add(time.Duration(i)*time.Second), int64(10+i), 1)
			if err := d.SetOnce(ctx, fmt.Sprint("k", i), r, nil, 0); err != nil {
				t.Fatal(err)
			}
		}
		r := runOf("j", time.Now().Add(4999*time.Second), 5009, 1)
		wantApplied(t, d.SetOnce(ctx, "k4999", runOf("j", r.Slot, 6000, 2), nil, 0), "k4999", r.Key(), 6000, 5009)
	})
}

func TestMemorySetOnceInvalid(t *testing.T) {
	var m fence.Memory
	ctx := t.Context()
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, err := range map[string]error{
		"empty key":          m.SetOnce(ctx, "", runOf("j", slot, 1, 1), nil, 0),
		"empty job":          m.SetOnce(ctx, "k", runOf("", slot, 1, 1), nil, 0),
		"zero fence":         m.SetOnce(ctx, "k", runOf("j", slot, 0, 1), nil, 0),
		"negative ttl":       m.SetOnce(ctx, "k", runOf("j", slot, 1, 1), nil, -1),
		"negative retention": (&fence.Memory{Retain: -1}).SetOnce(ctx, "k", runOf("j", slot, 1, 1), nil, 0),
	} {
		if !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// A record lasts, by default, as long as a slot's marker: the marker of a
// claim that leaves its retention to the store.
func TestDefaultRetainIsMarkerRetention(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	slot := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	res, err := store.Claim(t.Context(), slotstore.ClaimParams{Replica: "a",
		Requests: []slotstore.ClaimRequest{{Job: "report", Slot: slot, Lease: time.Minute, Term: true}}})
	if err != nil || res[0].Status != slotstore.Won {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	if kept := res[0].Marker.KeepUntil.Sub(slot); kept != fence.DefaultRetain {
		t.Fatalf("fence.DefaultRetain = %v, a marker's default retention %v", fence.DefaultRetain, kept)
	}
}
