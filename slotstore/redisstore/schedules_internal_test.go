package redisstore

import (
	"slices"
	"testing"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestScheduleIndexedOnRetryCluster: in a Cluster, a writer that stops
// after its entries were written and before the indexes recorded them (a
// lost connection, a crash) leaves schedules the indexes do not show; the
// same batch retried changes no entry but indexes them, with new sequence
// numbers stamped into the entries.
func TestScheduleIndexedOnRetryCluster(t *testing.T) {
	c := testserver.StartRedisCluster(t, 3)
	ctx := t.Context()
	s, err := Open(ctx, Options{Addrs: c.Addrs(), Prefix: "retry:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := slotstore.ScheduleWrite{ID: "before", Run: "j", Spec: slotstore.Spec{Fingerprint: "a"}, IfVersion: slotstore.AnyVersion}
	if _, err := s.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "api", Writes: []slotstore.ScheduleWrite{before}}); err != nil {
		t.Fatal(err)
	}
	p := slotstore.WriteSchedulesParams{By: "api"}
	for _, id := range []string{"x", "y", "z"} {
		p.Writes = append(p.Writes, slotstore.ScheduleWrite{ID: id, Run: "j", Spec: slotstore.Spec{Fingerprint: "a"}, IfVersion: 0})
	}
	p.Writes = append(p.Writes, slotstore.ScheduleWrite{ID: "before", Delete: true, IfVersion: 1})
	ids := []string{"x", "y", "z", "before"}
	// The first round alone, as WriteSchedules sends it.
	_, calls := s.jobCalls(schedWriteScript, ids, func(k jobKeys) string { return k.spec },
		func(idx []int) []any { return s.writeArgs(p, idx) })
	for _, cmd := range s.runAll(ctx, calls) {
		if err := cmd.Err(); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		got, err := s.Schedules(ctx, slotstore.ScheduleParams{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.Job)
		}
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("schedules before the indexes recorded the writes: %q", got)
	}
	head := func() slotstore.Changes {
		c, err := s.ScheduleChanges(ctx, slotstore.ChangesParams{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	was := head()

	res, err := s.WriteSchedules(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res[:3] {
		if r.Err != nil || r.Entry.Version != 1 || r.Entry.Seq <= was.Head {
			t.Errorf("retried put %d: %+v, %v", i, r.Entry, r.Err)
		}
	}
	if r := res[3]; r.Err == nil || !r.Entry.Deleted || r.Entry.Seq <= was.Head {
		t.Errorf("retried delete (at a version its first try raised): %+v, %v", r.Entry, r.Err)
	}
	if got := list(); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("schedules after the retry: %q", got)
	}
	now := head()
	if len(now.Entries) != 4 || now.Head != was.Head+4 || now.Entries[3].Seq != now.Head {
		t.Fatalf("changes after the retry: %+v (head before %d)", now, was.Head)
	}
	entries, err := s.entries(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Seq != res[i].Entry.Seq {
			t.Errorf("entry %s: seq %d, the write answered %d", e.Job, e.Seq, res[i].Entry.Seq)
		}
	}
}

// TestScheduleChangesSkipGoneEntries: an ID the sequence index names whose
// entry is gone (its master lost it, or someone deleted its keys) is left
// out, and the page read on, so a page is short only at the end of the
// feed; written anew, it is back in the feed.
func TestScheduleChangesSkipGoneEntries(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, Options{Addrs: []string{testserver.StartRedis(t).Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := slotstore.WriteSchedulesParams{By: "api"}
	for _, id := range []string{"a", "b", "c", "d"} {
		p.Writes = append(p.Writes, slotstore.ScheduleWrite{ID: id, Run: "j", Spec: slotstore.Spec{Fingerprint: "f"}, IfVersion: 0})
	}
	if _, err := s.WriteSchedules(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Del(ctx, keysOf(s.prefix, "b").spec).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := s.ScheduleChanges(ctx, slotstore.ChangesParams{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range c.Entries {
		got = append(got, e.Job)
	}
	if !slices.Equal(got, []string{"a", "c"}) || c.Head != 4 {
		t.Fatalf("changes, limit 2, with b gone: %q, head %d; want a and c, head 4", got, c.Head)
	}
	list, err := s.Schedules(ctx, slotstore.ScheduleParams{Limit: 2})
	if err != nil || len(list) != 2 || list[1].Job != "c" {
		t.Fatalf("schedules, limit 2, with b gone: %+v, %v", list, err)
	}
	// b written anew starts again at version 1, which the indexes held:
	// on a single server it is indexed all the same, with a new number.
	res, err := s.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "api", Writes: p.Writes[1:2]})
	if err != nil || res[0].Err != nil || res[0].Entry.Version != 1 || res[0].Entry.Seq != 5 {
		t.Fatalf("b written anew: %+v, %v", res, err)
	}
	if c, err = s.ScheduleChanges(ctx, slotstore.ChangesParams{After: 4}); err != nil || len(c.Entries) != 1 || c.Entries[0].Seq != 5 {
		t.Fatalf("changes after b written anew: %+v, %v", c, err)
	}
}
