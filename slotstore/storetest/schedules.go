package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// put writes one schedule by "api" and returns its result, failing the
// test on a call error (not on the result's own).
func put(t *testing.T, s slotstore.Store, w slotstore.ScheduleWrite) slotstore.ScheduleResult {
	t.Helper()
	res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: []slotstore.ScheduleWrite{w}})
	if err != nil {
		t.Fatalf("write schedule %s: %v", w.ID, err)
	}
	if len(res) != 1 {
		t.Fatalf("write schedule %s: %d results, want 1", w.ID, len(res))
	}
	return res[0]
}

// putOK is put that fails the test unless the write succeeded.
func putOK(t *testing.T, s slotstore.Store, w slotstore.ScheduleWrite) slotstore.CatalogEntry {
	t.Helper()
	res := put(t, s, w)
	if res.Err != nil {
		t.Fatalf("write schedule %s: %v", w.ID, res.Err)
	}
	return res.Entry
}

// sched is a put of id running job under spec fp, with any version.
func sched(id, job, fp string) slotstore.ScheduleWrite {
	return slotstore.ScheduleWrite{ID: id, Run: job, Spec: spec(fp, 0), IfVersion: slotstore.AnyVersion}
}

// testSchedulePut: a put creates a schedule held as data (version 1, a
// sequence number, the writer as its source, a generation begun); the same
// put again changes nothing; another spec replaces it as a new version.
func testSchedulePut(t *testing.T, s slotstore.Store) {
	before := time.Now()
	w := sched("tenant-1", "digest", "p1")
	w.Spec.Body = []byte{0, 1, 2, 0xff, '"', '\\'}
	e := putOK(t, s, w)
	if e.Job != "tenant-1" || e.Run != "digest" || e.Version != 1 || e.Seq <= 0 || e.Deleted || len(e.Past) != 0 ||
		e.InForce.Fingerprint != "p1" || !bytes.Equal(e.InForce.Body, w.Spec.Body) || e.InForce.Replica != "api" ||
		len(e.Carriers) != 0 {
		t.Fatalf("created schedule: %+v", e)
	}
	within(t, "since", e.InForce.Since, before.Add(-time.Second), time.Now().Add(time.Second))
	if got := entry(t, s, "tenant-1"); got.Run != "digest" || got.Version != 1 || got.Seq != e.Seq || !bytes.Equal(got.InForce.Body, w.Spec.Body) {
		t.Fatalf("catalog of the created schedule: %+v, the write answered %+v", got, e)
	}
	g := enroll(t, s, "tenant-1")[0]
	within(t, "the generation the put began", g.Born, before.Add(-time.Second), e.InForce.Since.Add(time.Second))

	again := putOK(t, s, w)
	if again.Version != 1 || again.Seq != e.Seq || !again.InForce.Since.Equal(e.InForce.Since) {
		t.Fatalf("the same put again changed the schedule: %+v, was %+v", again, e)
	}
	v2 := putOK(t, s, sched("tenant-1", "digest", "p2"))
	if v2.Version != 2 || v2.Seq <= e.Seq || v2.InForce.Fingerprint != "p2" || len(v2.Past) != 1 ||
		v2.Past[0].Fingerprint != "p1" || v2.Past[0].Until.IsZero() {
		t.Fatalf("changed schedule: %+v", v2)
	}
	v3 := putOK(t, s, sched("tenant-1", "other-job", "p3")) // another job: a change (its spec covers it)
	if v3.Version != 3 || v3.Run != "other-job" || v3.Seq <= v2.Seq {
		t.Fatalf("schedule moved to another job: %+v", v3)
	}
}

// testScheduleVersions: IfVersion is the write's precondition; a refused
// write changes nothing and says why.
func testScheduleVersions(t *testing.T, s slotstore.Store) {
	create := sched("v", "j", "a")
	create.IfVersion = 0
	e := putOK(t, s, create)
	stale := sched("v", "j", "b")
	stale.IfVersion = 0
	if res := put(t, s, stale); !errors.Is(res.Err, slotstore.ErrVersionMismatch) || res.Entry.Version != 1 || res.Entry.InForce.Fingerprint != "a" {
		t.Fatalf("a create of an existing schedule: %+v, Err %v", res.Entry, res.Err)
	}
	stale.IfVersion = 7
	if res := put(t, s, stale); !errors.Is(res.Err, slotstore.ErrVersionMismatch) {
		t.Fatalf("a put at version 7 of version 1: Err %v", res.Err)
	}
	ok := sched("v", "j", "b")
	ok.IfVersion = e.Version
	if e = putOK(t, s, ok); e.Version != 2 {
		t.Fatalf("put at the current version: %+v", e)
	}
	ok.IfVersion = 1 // the same put retried after its reply was lost: idempotent
	if res := put(t, s, ok); res.Err != nil || res.Entry.Version != 2 {
		t.Fatalf("the put retried: %+v, Err %v", res.Entry, res.Err)
	}
	del := slotstore.ScheduleWrite{ID: "v", Delete: true, IfVersion: 1}
	if res := put(t, s, del); !errors.Is(res.Err, slotstore.ErrVersionMismatch) || res.Entry.Deleted {
		t.Fatalf("a delete at a stale version: %+v, Err %v", res.Entry, res.Err)
	}
	del.IfVersion = 2
	if e = putOK(t, s, del); !e.Deleted || e.Version != 3 {
		t.Fatalf("delete at the current version: %+v", e)
	}
	if got := entry(t, s, "v"); !got.Deleted || got.Version != 3 || got.InForce.Fingerprint != slotstore.DeletedFingerprint {
		t.Fatalf("catalog after the delete: %+v", got)
	}
	again := sched("v", "j", "c")
	again.IfVersion = 0 // a deleted schedule is created anew at version 0
	if e = putOK(t, s, again); e.Deleted || e.Version != 4 || e.InForce.Fingerprint != "c" || e.Past[0].Fingerprint != slotstore.DeletedFingerprint {
		t.Fatalf("a create of a deleted schedule: %+v", e)
	}
	if res := put(t, s, slotstore.ScheduleWrite{ID: "nothing", Delete: true, IfVersion: slotstore.AnyVersion}); !errors.Is(res.Err, slotstore.ErrNoSchedule) {
		t.Fatalf("a delete of no schedule: Err %v", res.Err)
	}
}

// testScheduleDelete: a delete puts the deleted spec in force, keeps the
// one it had first in Past, and a second delete finds no schedule.
func testScheduleDelete(t *testing.T, s slotstore.Store) {
	e := putOK(t, s, sched("d", "j", "a"))
	d := putOK(t, s, slotstore.ScheduleWrite{ID: "d", Delete: true, IfVersion: slotstore.AnyVersion})
	if !d.Deleted || d.Run != "j" || d.Version != 2 || d.Seq <= e.Seq || d.InForce.Fingerprint != slotstore.DeletedFingerprint ||
		d.InForce.Replica != "api" || len(d.InForce.Body) != 0 || len(d.Past) != 1 || d.Past[0].Fingerprint != "a" || d.Past[0].Until.IsZero() {
		t.Fatalf("deleted schedule: %+v", d)
	}
	res := put(t, s, slotstore.ScheduleWrite{ID: "d", Delete: true, IfVersion: slotstore.AnyVersion})
	if !errors.Is(res.Err, slotstore.ErrNoSchedule) || res.Entry.Version != 2 {
		t.Fatalf("a second delete: %+v, Err %v", res.Entry, res.Err)
	}
}

// testScheduleClaims: a claim naming a schedule's spec that a put replaced
// or a delete ended is Superseded from the write on.
func testScheduleClaims(t *testing.T, s slotstore.Store) {
	sl := slots(3)
	putOK(t, s, sched("sc", "j", "a"))
	r := req("sc", sl[0], longLease)
	r.Spec = "a"
	mustWin(t, s, "r1", r)
	putOK(t, s, sched("sc", "j", "b"))
	r = req("sc", sl[1], longLease)
	r.Spec = "a"
	wantStatus(t, "claim under the replaced spec", claimOne(t, s, "r1", r), slotstore.Superseded)
	r.Spec = "b"
	mustWin(t, s, "r1", r)
	putOK(t, s, slotstore.ScheduleWrite{ID: "sc", Delete: true, IfVersion: slotstore.AnyVersion})
	r = req("sc", sl[2], longLease)
	r.Spec = "b"
	wantStatus(t, "claim of a deleted schedule", claimOne(t, s, "r1", r), slotstore.Superseded)
	sk := skipOne(t, s, "r1", slotstore.SkipRequest{Job: "sc", Slot: sl[2], Reason: "missed", Spec: "b"})
	wantStatus(t, "skip of a deleted schedule", sk, slotstore.Superseded)
	if _, ok := find(t, s, "sc", sl[2]); ok {
		t.Fatal("a claim or skip of a deleted schedule recorded its slot")
	}
}

// testScheduleConfig: the configuration's jobs and schedules held as data
// share names but not owners: writes of a configuration's job are refused,
// enrolments of a live schedule change nothing, and a deleted schedule's
// name is free for the configuration.
func testScheduleConfig(t *testing.T, s slotstore.Store) {
	offer(t, s, "r1", "yaml", spec("y", 0))
	if res := put(t, s, sched("yaml", "j", "a")); !errors.Is(res.Err, slotstore.ErrNotSchedule) || res.Entry.InForce.Fingerprint != "y" {
		t.Fatalf("a put of a configuration's job: %+v, Err %v", res.Entry, res.Err)
	}
	if res := put(t, s, slotstore.ScheduleWrite{ID: "yaml", Delete: true, IfVersion: slotstore.AnyVersion}); !errors.Is(res.Err, slotstore.ErrNotSchedule) {
		t.Fatalf("a delete of a configuration's job: Err %v", res.Err)
	}
	if e := entry(t, s, "yaml"); e.Run != "" || e.Version != 0 || e.InForce.Fingerprint != "y" || len(e.Carriers) != 1 {
		t.Fatalf("the configuration's job after refused writes: %+v", e)
	}

	e := putOK(t, s, sched("both", "j", "a"))
	got := offer(t, s, "r1", "both", spec("y", 9))
	if got.Fingerprint != "a" {
		t.Fatalf("an enrolment of a live schedule answered spec %q in force, want a", got.Fingerprint)
	}
	if after := entry(t, s, "both"); after.Run != "j" || after.Version != e.Version || after.Seq != e.Seq || len(after.Carriers) != 0 {
		t.Fatalf("a live schedule after an enrolment of its name: %+v", after)
	}
	putOK(t, s, slotstore.ScheduleWrite{ID: "both", Delete: true, IfVersion: slotstore.AnyVersion})
	got = offer(t, s, "r1", "both", spec("y", 0))
	after := inForce(t, s, "an enrolment of a deleted schedule", "both", got, "y")
	if after.Run != "" || after.Deleted || len(after.Carriers) != 1 || after.Past[0].Fingerprint != slotstore.DeletedFingerprint {
		t.Fatalf("a deleted schedule's name enrolled by the configuration: %+v", after)
	}
	if list := schedules(t, s, slotstore.ScheduleParams{}); len(list) != 0 {
		t.Fatalf("schedules list a configuration's job: %+v", list)
	}
}
