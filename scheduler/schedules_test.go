package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// scheduleRig is a memory store's schedules, validated against a registry
// with job "digest" and defaulting from a configuration whose own digest
// job forbids overlaps.
func scheduleRig(t *testing.T) (*Schedules, *memstore.Store) {
	t.Helper()
	reg := jobs.NewRegistry()
	reg.Register("digest", func(context.Context, jobs.Run) error { return nil })
	cfg, err := Parse("test.yaml", []byte("defaults: {lease: 20s}\njobs: {digest: {schedule: '@daily', overlap: forbid}}"))
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	return NewSchedules(st, cfg, reg).By("test"), st
}

// TestScheduleValidation: a schedule refused names its field, as the YAML
// job's checks word it, and writes nothing.
func TestScheduleValidation(t *testing.T) {
	s, st := scheduleRig(t)
	ok := Schedule{ID: "t1", Job: "digest", Schedule: "0 9 * * *"}
	for _, c := range []struct {
		change      func(*Schedule)
		field, text string
	}{
		{func(sc *Schedule) { sc.Schedule = "61 * * * *" }, "schedule", `"61 * * * *"`},
		{func(sc *Schedule) { sc.Schedule = "" }, "schedule", "required"},
		{func(sc *Schedule) { sc.Job = "nobody" }, "job", `"nobody"`},
		{func(sc *Schedule) { sc.Job = "" }, "job", "required"},
		{func(sc *Schedule) { sc.ID = "a b" }, "id", "printable"},
		{func(sc *Schedule) { sc.ID = "" }, "id", "1 to 200"},
		{func(sc *Schedule) { sc.ID = "x@y" }, "id", "'@'"},
		{func(sc *Schedule) { sc.Policy.Timezone = "Mars/Olympus" }, "timezone", "Mars/Olympus"},
		{func(sc *Schedule) { sc.Policy.Lease = Duration(time.Millisecond) }, "lease", "1ms"},
		{func(sc *Schedule) { sc.Policy.Overlap = "sometimes" }, "overlap", "sometimes"},
		{func(sc *Schedule) { sc.Policy.CatchUpLimit = 5000 }, "catch_up_limit", "5000"},
		{func(sc *Schedule) { sc.Params = json.RawMessage(`{"a":`) }, "params", "JSON"},
		{func(sc *Schedule) { sc.Params = json.RawMessage(`"` + strings.Repeat("x", 9000) + `"`) }, "params", "bytes"},
		{func(sc *Schedule) {
			sc.Start, sc.End = time.Now().Add(time.Hour), time.Now()
		}, "end", "before start"},
		{func(sc *Schedule) { sc.End = time.Now().Add(-time.Hour) }, "end", "no slot"},
	} {
		sc := ok
		c.change(&sc)
		_, err := s.Put(t.Context(), sc)
		var es ScheduleErrors
		if !errors.As(err, &es) {
			t.Errorf("%+v: %v, want ScheduleErrors", sc, err)
			continue
		}
		found := false
		for _, e := range es {
			found = found || e.Field == c.field && strings.Contains(e.Msg, c.text)
		}
		if !found {
			t.Errorf("%s %q: %v, want field %s saying %q", c.field, sc.Schedule, err, c.field, c.text)
		}
	}
	if list, err := st.Schedules(t.Context(), slotstore.ScheduleParams{}); err != nil || len(list) != 0 {
		t.Fatalf("refused schedules wrote %v %v", list, err)
	}
}

// TestSchedulesRoundTrip: a put stores the schedule resolved (its policies
// from the configuration's job of its registered job, then the defaults),
// Get and List read it back as written, an unchanged put keeps its
// version, versions guard writes, and a delete ends it.
func TestSchedulesRoundTrip(t *testing.T) {
	s, _ := scheduleRig(t)
	ctx := t.Context()
	sc := Schedule{ID: "tenant/1", Job: "digest", Schedule: "30 9 * * *", Params: json.RawMessage(`{"email":"a@example.com"}`),
		Policy: Policy{Timezone: "Europe/Berlin", Jitter: Duration(30 * time.Second)}, End: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	got, err := s.Create(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Policy
	if got.Version != 1 || got.UpdatedBy != "test" || p.Overlap != policy.OverlapForbid || p.Lease.D() != 20*time.Second ||
		p.Timezone != "Europe/Berlin" || p.Jitter.D() != 30*time.Second || string(got.Params) != string(sc.Params) ||
		!got.End.Equal(sc.End) || got.Schedule != sc.Schedule {
		t.Fatalf("created %+v", got)
	}
	if again, err := s.Create(ctx, sc); err != nil || again.Version != 1 {
		t.Fatalf("the same create again (a retry whose reply was lost): %+v %v", again, err)
	}
	other := sc
	other.Schedule = "0 10 * * *"
	if _, err := s.Create(ctx, other); !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("a create of another spec under an existing ID: %v", err)
	}
	again, err := s.Put(ctx, got) // as read back: nothing changes
	if err != nil || again.Version != 1 {
		t.Fatalf("a put of the schedule as read: %+v %v", again, err)
	}
	sc.Schedule = "45 9 * * *"
	sc.Version = 7
	if _, err := s.Put(ctx, sc); !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("a put at a stale version: %v", err)
	}
	sc.Version = 1
	if got, err = s.Put(ctx, sc); err != nil || got.Version != 2 {
		t.Fatalf("a put at the current version: %+v %v", got, err)
	}
	if err := s.Pause(ctx, "tenant/1", "customer asked"); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Get(ctx, "tenant/1"); err != nil || !got.Paused || got.Schedule != "45 9 * * *" {
		t.Fatalf("get: %+v %v", got, err)
	}
	res, err := s.PutAll(ctx, []Schedule{{ID: "tenant/2", Job: "digest", Schedule: "@hourly"},
		{ID: "tenant/3", Job: "nobody", Schedule: "@hourly"}, {ID: "other/1", Job: "digest", Schedule: "@every 90s"}})
	if err != nil || res[0].Err != nil || res[1].Err == nil || res[2].Err != nil {
		t.Fatalf("put all: %+v %v", res, err)
	}
	list, err := s.List(ctx, ListSchedules{Prefix: "tenant/", Job: "digest"})
	if err != nil || len(list) != 2 || list[0].ID != "tenant/1" || list[1].ID != "tenant/2" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.Delete(ctx, "tenant/1", 1); !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("a delete at a stale version: %v", err)
	}
	if err := s.Delete(ctx, "tenant/1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "tenant/1"); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("get of a deleted schedule: %v", err)
	}
	if err := s.Delete(ctx, "tenant/1", 0); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("a second delete: %v", err)
	}
	// Its pause went with it: made anew, it runs.
	if again, err := s.Create(ctx, Schedule{ID: "tenant/1", Job: "digest", Schedule: "@hourly"}); err != nil || again.Paused {
		t.Fatalf("the schedule made anew: %+v %v", again, err)
	}
	if err := s.Pause(ctx, "nobody", "why"); !errors.Is(err, ErrNoSchedule) {
		t.Fatalf("a pause of no schedule: %v", err)
	}
}

// TestScheduleOfConfiguration: a job of the configuration, enrolled, is no
// schedule: the API refuses to replace or delete it, and may pause it.
func TestScheduleOfConfiguration(t *testing.T) {
	s, st := scheduleRig(t)
	ctx := t.Context()
	if _, err := st.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"nightly"}, Replica: "r1",
		Specs: []slotstore.Spec{{Fingerprint: "v1:x", Body: []byte("{}")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, Schedule{ID: "nightly", Job: "digest", Schedule: "@hourly"}); !errors.Is(err, ErrNotSchedule) {
		t.Fatalf("a put of a job of the configuration: %v", err)
	}
	if err := s.Delete(ctx, "nightly", 0); !errors.Is(err, ErrNotSchedule) {
		t.Fatalf("a delete of a job of the configuration: %v", err)
	}
	if err := s.Pause(ctx, "nightly", "maintenance"); err != nil {
		t.Fatal(err)
	}
	if ps, err := st.Pauses(ctx); err != nil || len(ps.Jobs) != 1 || ps.Jobs[0] != "nightly" {
		t.Fatalf("pauses %+v %v", ps, err)
	}
}
