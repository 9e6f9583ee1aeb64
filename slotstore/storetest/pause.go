package storetest

import (
	"slices"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
)

// testPauses: pauses of jobs and of the whole cluster round-trip, sorted,
// and setting one twice, or resuming what is not paused, changes nothing.
func testPauses(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	want := func(what string, all bool, jobs ...string) {
		t.Helper()
		p, err := s.Pauses(ctx)
		if err != nil {
			t.Fatalf("%s: pauses: %v", what, err)
		}
		if p.All != all || p.Jobs == nil || !slices.Equal(p.Jobs, jobs) {
			t.Errorf("%s: pauses %+v, want all %v, jobs %q", what, p, all, jobs)
		}
	}
	set := func(job string, paused bool) {
		t.Helper()
		if err := s.SetPause(ctx, slotstore.PauseParams{Job: job, Paused: paused}); err != nil {
			t.Fatalf("set pause of %q to %v: %v", job, paused, err)
		}
	}
	want("a new store", false)
	for _, job := range []string{"b", "{odd} job", "a", "a", ""} {
		set(job, true)
	}
	want("after pausing", true, "a", "b", "{odd} job")
	set("", true)
	set("c", true)
	want("after pausing again", true, "a", "b", "c", "{odd} job")
	for _, job := range []string{"b", "", "", "never paused", "{odd} job"} {
		set(job, false)
	}
	want("after resuming", false, "a", "c")
	set("a", false)
	set("c", false)
	want("after resuming every job", false)
}
