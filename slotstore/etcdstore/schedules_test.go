package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// writeOK writes ws by "api" and fails the test unless every write
// succeeded.
func writeOK(t *testing.T, s slotstore.Store, ws ...slotstore.ScheduleWrite) []slotstore.CatalogEntry {
	t.Helper()
	res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: ws})
	if err != nil {
		t.Fatalf("write schedules: %v", err)
	}
	out := make([]slotstore.CatalogEntry, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("write schedule %s: %v", ws[i].ID, r.Err)
		}
		out[i] = r.Entry
	}
	return out
}

func put(id, run, fp string) slotstore.ScheduleWrite {
	return slotstore.ScheduleWrite{ID: id, Run: run, Spec: slotstore.Spec{Fingerprint: fp}, IfVersion: slotstore.AnyVersion}
}

func del(id string) slotstore.ScheduleWrite {
	return slotstore.ScheduleWrite{ID: id, Delete: true, IfVersion: slotstore.AnyVersion}
}

func listed(t *testing.T, s slotstore.Store, p slotstore.ScheduleParams) []string {
	t.Helper()
	es, err := s.Schedules(t.Context(), p)
	if err != nil {
		t.Fatalf("schedules %+v: %v", p, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Job)
	}
	return out
}

// The Seq of a write is the revision of its transaction, the ModRevision
// of the schedule's sched/ key; a batch's writes of one schedule each get
// their own; the answer, Catalog, Schedules and ScheduleChanges agree,
// and an enrolment of a deleted schedule's ID, which writes its entry
// again, keeps it.
func TestScheduleSeqIsRevision(t *testing.T) {
	s := open(t)
	es := writeOK(t, s, put("x", "j", "a"), put("x", "j", "a"), put("x", "j", "b"), put("y", "j", "a"), del("x"))
	for i := 1; i < len(es); i++ {
		if es[i].Seq < es[i-1].Seq || (i != 1 && es[i].Seq == es[i-1].Seq) {
			t.Fatalf("sequence numbers of the batch: %d then %d (write %d)", es[i-1].Seq, es[i].Seq, i)
		}
	}
	if es[1].Seq != es[0].Seq || es[1].Version != 1 {
		t.Fatalf("the unchanged put answered %+v, the put %+v", es[1], es[0])
	}
	for _, e := range []slotstore.CatalogEntry{es[3], es[4]} {
		resp, err := s.Client().Get(t.Context(), s.Prefix()+"sched/"+e.Job)
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != e.Seq {
			t.Fatalf("sched/%s: %v, %v; want ModRevision %d", e.Job, resp, err, e.Seq)
		}
	}
	cat, err := s.Catalog(t.Context(), slotstore.CatalogParams{Jobs: []string{"x", "y"}})
	if err != nil || len(cat) != 2 || cat[0].Seq != es[4].Seq || cat[1].Seq != es[3].Seq {
		t.Fatalf("catalog: %+v, %v; want seqs %d, %d", cat, err, es[4].Seq, es[3].Seq)
	}
	if l, err := s.Schedules(t.Context(), slotstore.ScheduleParams{}); err != nil || len(l) != 1 || l[0].Seq != es[3].Seq {
		t.Fatalf("schedules: %+v, %v", l, err)
	}
	c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{})
	if err != nil || len(c.Entries) != 2 || c.Entries[0].Seq != es[3].Seq || c.Entries[1].Seq != es[4].Seq || c.Head != es[4].Seq {
		t.Fatalf("changes: %+v, %v", c, err)
	}
	if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"x"}, Replica: "r1",
		Specs: []slotstore.Spec{{Fingerprint: "yaml"}}}); err != nil {
		t.Fatal(err)
	}
	cat, err = s.Catalog(t.Context(), slotstore.CatalogParams{Jobs: []string{"x"}})
	if err != nil || len(cat) != 1 || cat[0].Seq != es[4].Seq || cat[0].Version != 3 || cat[0].Run != "" || cat[0].InForce.Fingerprint != "yaml" {
		t.Fatalf("catalog after the enrolment of the deleted schedule: %+v, %v; want seq %d", cat, err, es[4].Seq)
	}
	c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: es[3].Seq})
	if err != nil || len(c.Entries) != 1 || c.Entries[0].Seq != es[4].Seq || c.Head != es[4].Seq {
		t.Fatalf("changes after the enrolment: %+v, %v", c, err)
	}
}

// The indexes follow a schedule from run to run and out with its delete,
// and list IDs in their own order whatever bytes they hold (their keys
// are not escaped).
func TestScheduleIndexes(t *testing.T) {
	s := open(t)
	writeOK(t, s, put("m", "a", "1"))
	writeOK(t, s, put("m", "b", "1"))
	if got := listed(t, s, slotstore.ScheduleParams{Run: "a"}); len(got) != 0 {
		t.Fatalf("run a after the schedule moved to b: %q", got)
	}
	if got := listed(t, s, slotstore.ScheduleParams{Run: "b"}); !slices.Equal(got, []string{"m"}) {
		t.Fatalf("run b: %q", got)
	}
	writeOK(t, s, del("m"))
	if got := listed(t, s, slotstore.ScheduleParams{Run: "b"}); len(got) != 0 {
		t.Fatalf("run b after the delete: %q", got)
	}
	resp, err := s.Client().Get(t.Context(), s.Prefix()+"sched-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != s.Prefix()+"sched-head" {
		t.Fatalf("index keys left after the delete: %v, %v", resp.Kvs, err)
	}

	ids := []string{"t-1", "t/1", "t!1", "t%1", "t~", "t/0", "t.z", "u"}
	var ws []slotstore.ScheduleWrite
	for _, id := range ids {
		ws = append(ws, put(id, "r/x", "1"))
	}
	writeOK(t, s, ws...)
	want := slices.Sorted(slices.Values(ids))
	for _, p := range []slotstore.ScheduleParams{{}, {Run: "r/x"}} {
		if got := listed(t, s, p); !slices.Equal(got, want) {
			t.Fatalf("schedules %+v: %q, want %q", p, got, want)
		}
		var paged []string
		for after := ""; ; {
			p.After, p.Limit = after, 3
			page := listed(t, s, p)
			paged = append(paged, page...)
			if len(page) < 3 {
				break
			}
			after = page[len(page)-1]
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("schedules %+v in pages of 3: %q, want %q", p, paged, want)
		}
	}
	if got := listed(t, s, slotstore.ScheduleParams{Prefix: "t/", Run: "r/x"}); !slices.Equal(got, []string{"t/0", "t/1"}) {
		t.Fatalf("prefix t/: %q", got)
	}
	if got := listed(t, s, slotstore.ScheduleParams{Prefix: "t", After: "t~"}); len(got) != 0 {
		t.Fatalf("prefix t after t~: %q", got)
	}
	if got := listed(t, s, slotstore.ScheduleParams{Run: "r"}); len(got) != 0 {
		t.Fatalf("run r (a prefix of r/x): %q", got)
	}
}

// waitNotice fails the test unless ch gives a notice within d.
func waitNotice(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case _, open := <-ch:
		if !open {
			t.Fatalf("%s: the channel closed", what)
		}
	case <-time.After(d):
		t.Fatalf("%s: no notice within %v", what, d)
	}
}

// A watch of schedules outlives the death of the cluster's leader: a
// write by another store after it is noticed. The channel closes when the
// store does.
func TestWatchSchedulesLeaderKilled(t *testing.T) {
	c := sharedEtcd(t)
	watcher := open(t)
	writer := openWith(t, etcdstore.Options{Prefix: watcher.Prefix()})
	ch := watcher.WatchSchedules(t.Context())
	i := 0
	poll.Until(t, 10*time.Second, "a first notice", func() error {
		i++
		writeOK(t, writer, put("w", "j", fmt.Sprintf("v%d", i)))
		select {
		case <-ch:
			return nil
		case <-time.After(200 * time.Millisecond):
			return errors.New("no notice yet")
		}
	})
	killed := c.Leader()
	if killed == nil {
		t.Fatal("no leader to kill")
	}
	t.Cleanup(func() {
		if killed.PID() == 0 {
			if err := killed.Restart(); err != nil {
				t.Errorf("restart %s: %v", killed.Name(), err)
			}
		}
	})
	killed.Kill()
	poll.Until(t, 30*time.Second, "a schedule write after the leader died", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := writer.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "api",
			Writes: []slotstore.ScheduleWrite{put("w", "j", "after")}})
		return err
	})
	waitNotice(t, ch, 15*time.Second, "after the leader died")
	if err := killed.Restart(); err != nil {
		t.Fatalf("restart %s: %v", killed.Name(), err)
	}
	if err := watcher.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch { // a notice may be waiting: the channel must then close
	}
}

// A watch whose revision was compacted tells of it (writes may have been
// missed) and says to watch again from the newest revision.
func TestWatchSchedulesCompacted(t *testing.T) {
	s := open(t)
	first := writeOK(t, s, put("c", "j", "1"))[0]
	last := writeOK(t, s, put("c", "j", "2"))[0]
	if _, err := s.Client().Compact(t.Context(), last.Seq); err != nil {
		t.Fatalf("compact at %d: %v", last.Seq, err)
	}
	out := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if next := s.FollowSchedules(ctx, first.Seq, out); next != 0 {
		t.Fatalf("a watch from compacted revision %d: next %d, want 0 (the newest)", first.Seq, next)
	}
	waitNotice(t, out, time.Second, "a compacted watch")
}

// A quiet watch of schedules, whose member answers its progress
// requests, is not taken for a lost one: it runs until its context ends,
// and says nothing.
func TestWatchSchedulesQuiet(t *testing.T) {
	s := open(t)
	out := make(chan struct{}, 1)
	const d = 5 * time.Second // beyond the silence after which a watch starts again
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	s.FollowSchedules(ctx, 0, out)
	if took := time.Since(start); took < d-100*time.Millisecond {
		t.Fatalf("a quiet watch ended after %v, before its context (%v)", took, d)
	}
	select {
	case <-out:
		t.Fatal("a quiet watch sent a notice")
	default:
	}
}
