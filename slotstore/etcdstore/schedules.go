package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Schedules held as data (Schedules held as data in slotstore's package
// documentation) are catalog entries: cat/<id> holds the entry, with its
// run, version and deleted mark, and spec/<id> its fingerprint in force,
// as for any job, so a claim naming a schedule's spec is checked as any
// other. Beside them, every write that changes a schedule writes, in its
// own transaction:
//
//   - sched/<id>, empty: its ModRevision is the write's revision, the
//     schedule's Seq (ScheduleChanges ranges over these keys);
//   - sched-live/<id> and sched-run/<run>/<id>, empty, while the schedule
//     is live (Schedules ranges over these), deleted by its delete or,
//     for the old run, by a put that changes the run;
//   - sched-head, empty: its ModRevision is the newest write's, the Head.
//
// Seq is the revision of the transaction that last changed the schedule.
// Revisions grow in commit order across the whole cluster, so sequence
// numbers grow in the order the writes took effect. The entry a schedule
// write puts carries no seq: its Seq is the ModRevision of cat/<id>
// (decodeEntry), and the only other write of that key, an enrolment of a
// deleted schedule's ID (a live one's is never written), writes the Seq
// out. A delete is a write like a put: the deleted entry's Seq is the
// delete's revision, and sched/<id> stays, so the feed lists it.

// schedFence keeps a schedule write that changes an entry in a
// transaction without another (batch.fits, as a claim's fence): each one
// has the revision of its own, its Seq. No job is named so (names are
// text without control bytes).
const schedFence = "\x00schedule write"

// WriteSchedules implements slotstore.Store. The writes are decided in
// order in Go by rules.ApplyWrite, batched as Enroll's are: one read of the
// catalog, spec and generation keys of up to MaxTxnOps writes' schedules,
// then a transaction per write that changes a schedule (its revision is
// the schedule's Seq), which the writes around it that change nothing
// share; its compares cover every key the decisions read, and a
// transaction whose compares fail learns the keys from its Else and its
// writes are decided again.
func (s *Store) WriteSchedules(ctx context.Context, p slotstore.WriteSchedulesParams) ([]slotstore.ScheduleResult, error) {
	if err := rules.NormalizeWrites(p); err != nil {
		return nil, err
	}
	const op = "write schedules"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	res := make([]slotstore.ScheduleResult, len(p.Writes))
	b := s.newBatch(ctx, op)
	b.keysOf = func(i int) []string {
		w := p.Writes[i]
		if w.Delete {
			return []string{s.k.catalog(w.ID), s.k.spec(w.ID)}
		}
		return []string{s.k.catalog(w.ID), s.k.spec(w.ID), s.k.gen(w.ID)}
	}
	err := b.run(len(p.Writes), func(i int, st *step) {
		res[i] = st.writeSchedule(p.Writes[i], p.By)
	}, func(i int, rev int64) {
		if res[i].Entry.Seq == pendingFence {
			res[i].Entry.Seq = rev // written by this transaction, or read as its writes left it
		}
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// writeSchedule decides w, written by by, in st: it reads the schedule's
// entry, and when rules.ApplyWrite changes it, writes the entry, its spec
// key, its generation if it has none (a put, as Enroll begins one) and the
// indexes. The entry it answers has Seq pendingFence until the
// transaction's revision is known.
func (st *step) writeSchedule(w slotstore.ScheduleWrite, by string) slotstore.ScheduleResult {
	k := st.b.s.k
	cur, ok := st.entry(w.ID)
	if !ok {
		return slotstore.ScheduleResult{}
	}
	// The entry keeps times in milliseconds: answer as Catalog will read.
	now := time.UnixMilli(st.now.UnixMilli()).UTC()
	e, out, err := rules.ApplyWrite(cur, w, by, now)
	if out != rules.Changed {
		return slotstore.ScheduleResult{Entry: e, Err: err}
	}
	e.Seq = 0 // the key's ModRevision
	v, err := json.Marshal(rules.ToJSON(e))
	if err != nil {
		st.fail(fmt.Errorf("etcdstore: encoding the catalog entry of %s: %w", w.ID, err))
		return slotstore.ScheduleResult{}
	}
	st.put(k.catalog(w.ID), v, false)
	if sk := k.spec(w.ID); st.inForce(sk) != e.InForce.Fingerprint {
		st.put(sk, []byte(e.InForce.Fingerprint), false)
	}
	if !w.Delete {
		st.born(w.ID)
	}
	st.index(cur, e)
	st.fence = schedFence
	e.Seq = pendingFence
	return slotstore.ScheduleResult{Entry: e}
}

// index writes the index keys of a schedule write that turned entry cur
// (nil for none) into e.
func (st *step) index(cur *slotstore.CatalogEntry, e slotstore.CatalogEntry) {
	k := st.b.s.k
	st.put(k.schedule(e.Job), nil, false)
	st.put(k.schedHead(), nil, false)
	if cur != nil && cur.Run != "" && !cur.Deleted && (e.Deleted || cur.Run != e.Run) {
		st.del(k.byRun(cur.Run) + e.Job)
	}
	if e.Deleted {
		st.del(k.live() + e.Job)
		return
	}
	st.put(k.live()+e.Job, nil, false)
	st.put(k.byRun(e.Run)+e.Job, nil, false)
}
