package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// schedules lists schedules, failing the test on an error.
func schedules(t *testing.T, s slotstore.Store, p slotstore.ScheduleParams) []slotstore.CatalogEntry {
	t.Helper()
	out, err := s.Schedules(t.Context(), p)
	if err != nil {
		t.Fatalf("schedules %+v: %v", p, err)
	}
	return out
}

func ids(es []slotstore.CatalogEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Job
	}
	return out
}

// testScheduleList: Schedules lists the live schedules by ID, filtered by
// job, prefix and IDs, in pages.
func testScheduleList(t *testing.T, s slotstore.Store) {
	var ws []slotstore.ScheduleWrite
	for i := range 7 {
		job := "even"
		if i%2 == 1 {
			job = "odd"
		}
		ws = append(ws, sched(fmt.Sprintf("t/%02d", i), job, "p"))
	}
	ws = append(ws, sched("u/1", "even", "p"), sched("gone", "even", "p"))
	res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: ws})
	if err != nil || len(res) != len(ws) {
		t.Fatalf("a batch of %d puts: %d results, %v", len(ws), len(res), err)
	}
	putOK(t, s, slotstore.ScheduleWrite{ID: "gone", Delete: true, IfVersion: slotstore.AnyVersion})
	offer(t, s, "r1", "t/yaml", spec("y", 0))

	check := func(p slotstore.ScheduleParams, want ...string) {
		t.Helper()
		got := schedules(t, s, p)
		if !slices.Equal(ids(got), want) {
			t.Errorf("schedules %+v: %q, want %q", p, ids(got), want)
		}
		for _, e := range got {
			if e.Run == "" || e.Deleted || e.Version != 1 || e.InForce.Fingerprint != "p" {
				t.Errorf("listed %+v", e)
			}
		}
	}
	check(slotstore.ScheduleParams{}, "t/00", "t/01", "t/02", "t/03", "t/04", "t/05", "t/06", "u/1")
	check(slotstore.ScheduleParams{Run: "odd"}, "t/01", "t/03", "t/05")
	check(slotstore.ScheduleParams{Prefix: "t/"}, "t/00", "t/01", "t/02", "t/03", "t/04", "t/05", "t/06")
	check(slotstore.ScheduleParams{Prefix: "t/", Run: "even", After: "t/02", Limit: 2}, "t/04", "t/06")
	check(slotstore.ScheduleParams{Limit: 3}, "t/00", "t/01", "t/02")
	check(slotstore.ScheduleParams{After: "t/02", Limit: 3}, "t/03", "t/04", "t/05")
	check(slotstore.ScheduleParams{IDs: []string{"u/1", "gone", "t/yaml", "none", "t/03"}}, "t/03", "u/1")
	check(slotstore.ScheduleParams{Prefix: "v"})
}

// testScheduleChanges: the feed lists every write after a sequence number,
// deletes included, in the order of the writes, and the newest one's number.
func testScheduleChanges(t *testing.T, s slotstore.Store) {
	c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{})
	if err != nil || c.Head != 0 || len(c.Entries) != 0 {
		t.Fatalf("changes of an empty store: %+v, %v", c, err)
	}
	a := putOK(t, s, sched("a", "j", "1"))
	b := putOK(t, s, sched("b", "j", "1"))
	putOK(t, s, sched("a", "j", "1")) // no change
	a2 := putOK(t, s, sched("a", "j", "2"))
	d := putOK(t, s, slotstore.ScheduleWrite{ID: "b", Delete: true, IfVersion: slotstore.AnyVersion})
	if !(a.Seq < b.Seq && b.Seq < a2.Seq && a2.Seq < d.Seq) {
		t.Fatalf("sequence numbers %d, %d, %d, %d do not grow with the writes", a.Seq, b.Seq, a2.Seq, d.Seq)
	}
	c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{})
	if err != nil || c.Head != d.Seq || !slices.Equal(ids(c.Entries), []string{"a", "b"}) ||
		c.Entries[0].Seq != a2.Seq || c.Entries[1].Seq != d.Seq || !c.Entries[1].Deleted || c.Entries[0].InForce.Fingerprint != "2" {
		t.Fatalf("changes after 0: %+v, %v; want a at %d, b deleted at %d, head %d", c, err, a2.Seq, d.Seq, d.Seq)
	}
	c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: a2.Seq})
	if err != nil || c.Head != d.Seq || !slices.Equal(ids(c.Entries), []string{"b"}) {
		t.Fatalf("changes after %d: %+v, %v", a2.Seq, c, err)
	}
	c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{Limit: 1})
	if err != nil || c.Head != d.Seq || !slices.Equal(ids(c.Entries), []string{"a"}) {
		t.Fatalf("changes limited to 1: %+v, %v", c, err)
	}
	c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: d.Seq})
	if err != nil || c.Head != d.Seq || len(c.Entries) != 0 {
		t.Fatalf("changes after the head: %+v, %v", c, err)
	}
	offer(t, s, "r1", "yaml", spec("y", 0)) // an enrolment is no schedule write
	if c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: d.Seq}); err != nil || c.Head != d.Seq || len(c.Entries) != 0 {
		t.Fatalf("changes after an enrolment: %+v, %v", c, err)
	}
}

// testScheduleInvalid: an invalid write fails its whole batch, and
// nothing of it is written.
func testScheduleInvalid(t *testing.T, s slotstore.Store) {
	good := sched("good", "j", "a")
	long := string(make([]byte, 201))
	bad := map[string]slotstore.ScheduleWrite{
		"empty id":           sched("", "j", "a"),
		"id with a space":    sched("a b", "j", "a"),
		"long id":            sched(long, "j", "a"),
		"no run":             sched("x", "", "a"),
		"no fingerprint":     sched("x", "j", ""),
		"deleted fp":         sched("x", "j", slotstore.DeletedFingerprint),
		"revision":           {ID: "x", Run: "j", Spec: spec("a", 3), IfVersion: slotstore.AnyVersion},
		"supersedes":         {ID: "x", Run: "j", Spec: slotstore.Spec{Fingerprint: "a", Supersedes: "b"}, IfVersion: slotstore.AnyVersion},
		"big body":           {ID: "x", Run: "j", Spec: slotstore.Spec{Fingerprint: "a", Body: make([]byte, 16<<10+1)}, IfVersion: slotstore.AnyVersion},
		"delete with a spec": {ID: "x", Delete: true, Spec: spec("a", 0), IfVersion: slotstore.AnyVersion},
		"delete with a run":  {ID: "x", Delete: true, Run: "j", IfVersion: slotstore.AnyVersion},
		"version -2":         {ID: "x", Run: "j", Spec: spec("a", 0), IfVersion: -2},
	}
	for name, w := range bad {
		_, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: []slotstore.ScheduleWrite{good, w}})
		if !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for name, p := range map[string]slotstore.WriteSchedulesParams{
		"no writer":  {Writes: []slotstore.ScheduleWrite{good}},
		"no writes":  {By: "api"},
		"too many":   {By: "api", Writes: make([]slotstore.ScheduleWrite, slotstore.MaxScheduleWrites+1)},
		"bad writer": {By: "a\x00b", Writes: []slotstore.ScheduleWrite{good}},
	} {
		if _, err := s.WriteSchedules(t.Context(), p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if list := schedules(t, s, slotstore.ScheduleParams{}); len(list) != 0 {
		t.Fatalf("invalid batches wrote %q", ids(list))
	}
	for name, p := range map[string]slotstore.ScheduleParams{"limit": {Limit: -1}, "big limit": {Limit: 10001}, "empty id": {IDs: []string{""}}} {
		if _, err := s.Schedules(t.Context(), p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("schedules with %s: %v, want ErrInvalid", name, err)
		}
	}
	for name, p := range map[string]slotstore.ChangesParams{"after": {After: -1}, "limit": {Limit: -1}, "big limit": {Limit: 10001}} {
		if _, err := s.ScheduleChanges(t.Context(), p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("changes with %s: %v, want ErrInvalid", name, err)
		}
	}
}

// testScheduleConcurrent: writers racing on one schedule's version, each
// reading then writing the version it read, win once per version, and the
// feed holds every schedule once, at its last write.
func testScheduleConcurrent(t *testing.T, s slotstore.Store) {
	putOK(t, s, sched("race", "j", "v0"))
	const writers, rounds = 4, 5
	var mu sync.Mutex
	won := map[int64]int{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				cur, err := s.Schedules(t.Context(), slotstore.ScheduleParams{IDs: []string{"race"}})
				if err != nil || len(cur) != 1 {
					t.Errorf("read race: %+v, %v", cur, err)
					return
				}
				wr := sched("race", "j", fmt.Sprintf("w%d-r%d", w, r))
				wr.IfVersion = cur[0].Version
				res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api",
					Writes: []slotstore.ScheduleWrite{wr, sched(fmt.Sprintf("own-%d-%d", w, r), "j", "p")}})
				if err != nil {
					t.Errorf("write: %v", err)
					return
				}
				if res[0].Err == nil {
					mu.Lock()
					won[res[0].Entry.Version]++
					mu.Unlock()
				} else if !errors.Is(res[0].Err, slotstore.ErrVersionMismatch) {
					t.Errorf("a racing put: %v", res[0].Err)
				}
			}
		}()
	}
	wg.Wait()
	for v, n := range won {
		if n != 1 {
			t.Errorf("version %d written by %d writers", v, n)
		}
	}
	c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{})
	if err != nil || len(c.Entries) != 1+writers*rounds {
		t.Fatalf("changes: %d entries, %v; want %d", len(c.Entries), err, 1+writers*rounds)
	}
	for i := 1; i < len(c.Entries); i++ {
		if c.Entries[i].Seq <= c.Entries[i-1].Seq {
			t.Fatalf("changes out of order: %d after %d", c.Entries[i].Seq, c.Entries[i-1].Seq)
		}
	}
	if last := c.Entries[len(c.Entries)-1].Seq; c.Head != last {
		t.Fatalf("head %d, newest change %d", c.Head, last)
	}
}

// testScheduleWatch: a store that can tell of schedule writes does, to a
// watcher of another client as well, and closes the channel once the
// watch's context is done.
func testScheduleWatch(t *testing.T, s slotstore.Store) {
	w, ok := s.(slotstore.ScheduleWatcher)
	if !ok {
		t.Skip("the store has no watch of schedules")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := w.WatchSchedules(ctx)
	deadline := time.After(3 * patience)
	for i := 0; ; i++ {
		// A watch may take a moment to begin: write until a notice comes.
		putOK(t, s, sched("watched", "j", fmt.Sprintf("v%d", i)))
		select {
		case _, open := <-ch:
			if !open {
				t.Fatal("the watch's channel closed while its context lives")
			}
		case <-time.After(patience / 10):
			continue
		case <-deadline:
			t.Fatal("no notice of schedule writes")
		}
		break
	}
	cancel()
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("the watch's channel is still open after its context ended")
		}
	}
}
