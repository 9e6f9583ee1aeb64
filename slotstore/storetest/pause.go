package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

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

// testPauseNotes: a pause records who set it and why, with the store's
// time; a pause of what is already paused records its note anew; a resume
// deletes it; the cluster's note is under ""; and a note longer than 1,000
// bytes is refused with ErrInvalid and changes nothing, while a resume
// ignores its note.
func testPauseNotes(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	read := func(what string) slotstore.Pauses {
		t.Helper()
		p, err := s.Pauses(ctx)
		if err != nil {
			t.Fatalf("%s: pauses: %v", what, err)
		}
		if p.Notes == nil {
			t.Fatalf("%s: pauses %+v: nil notes", what, p)
		}
		return p
	}
	// set sets p and returns the test's clock just before and after.
	set := func(p slotstore.PauseParams) (lo, hi time.Time) {
		t.Helper()
		lo = time.Now()
		if err := s.SetPause(ctx, p); err != nil {
			t.Fatalf("set pause %+v: %v", p, err)
		}
		return lo, time.Now()
	}
	// note returns the note of job, failing the test unless it says by
	// and reason and was set between lo and hi.
	note := func(what, job, by, reason string, lo, hi time.Time) slotstore.PauseNote {
		t.Helper()
		n, ok := read(what).Notes[job]
		if !ok {
			t.Fatalf("%s: no note for %q", what, job)
		}
		if n.By != by || n.Reason != reason {
			t.Errorf("%s: note of %q is %+v, want by %q, reason %q", what, job, n, by, reason)
		}
		within(t, what+": note of "+job+": At", n.At, lo, hi)
		return n
	}
	if p := read("a new store"); len(p.Notes) != 0 {
		t.Errorf("a new store: notes %+v", p.Notes)
	}

	lo, hi := set(slotstore.PauseParams{Job: "a", Paused: true, By: "alice", Reason: "deploy in progress"})
	first := note("after pausing a", "a", "alice", "deploy in progress", lo, hi)
	lo, hi = set(slotstore.PauseParams{Paused: true, By: "cli root@host", Reason: "incident 42"})
	note("after pausing the cluster", "", "cli root@host", "incident 42", lo, hi)
	lo, hi = set(slotstore.PauseParams{Job: "{odd} job", Paused: true})
	note("after pausing with no note", "{odd} job", "", "", lo, hi)
	if p := read("after three pauses"); len(p.Notes) != 3 || !p.All || !slices.Equal(p.Jobs, []string{"a", "{odd} job"}) {
		t.Errorf("after three pauses: %+v, want all, jobs a and {odd} job, three notes", p)
	}

	// Pausing again records the note anew, at a later time by the store's
	// clock.
	waitStoreTime(t, s, "clock probe", first.At.Add(10*time.Millisecond))
	lo, hi = set(slotstore.PauseParams{Job: "a", Paused: true, By: "bob"})
	if again := note("after pausing a again", "a", "bob", "", lo, hi); !again.At.After(first.At) {
		t.Errorf("pausing a again: note set at %s, not after the first's %s", stamp(again.At), stamp(first.At))
	}

	// A note too long is refused and changes nothing, for a job paused or
	// not; exactly the limit, counted in bytes, is kept.
	before := read("before too-long notes")
	long, accent := strings.Repeat("x", 1001), strings.Repeat("é", 501) // 1,001 and 1,002 bytes
	for _, p := range []slotstore.PauseParams{
		{Job: "c", Paused: true, By: long},
		{Job: "c", Paused: true, Reason: long},
		{Job: "a", Paused: true, By: "carol", Reason: accent},
		{Paused: true, By: accent},
	} {
		err := s.SetPause(ctx, p)
		if !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("set pause of %q with a %d-byte by and a %d-byte reason: %v, want ErrInvalid", p.Job, len(p.By), len(p.Reason), err)
		}
		samePauses(t, "after a refused pause of "+p.Job, read("after a refused pause"), before)
	}
	limit := strings.Repeat("é", 500)
	lo, hi = set(slotstore.PauseParams{Job: "c", Paused: true, By: limit, Reason: strings.Repeat("y", 1000)})
	note("after pausing with notes at the limit", "c", limit, strings.Repeat("y", 1000), lo, hi)

	// A resume deletes the note, and ignores a note of its own.
	set(slotstore.PauseParams{Job: "a", Paused: false, By: long, Reason: long})
	set(slotstore.PauseParams{Paused: false})
	p := read("after resuming a and the cluster")
	if _, ok := p.Notes["a"]; ok || p.All || !slices.Equal(p.Jobs, []string{"c", "{odd} job"}) {
		t.Errorf("after resuming a and the cluster: %+v", p)
	}
	if _, ok := p.Notes[""]; ok {
		t.Errorf("after resuming the cluster: its note is still there: %+v", p.Notes[""])
	}
	if len(p.Notes) != 2 {
		t.Errorf("after resuming a and the cluster: notes %+v, want those of c and {odd} job", p.Notes)
	}
	lo, hi = set(slotstore.PauseParams{Job: "a", Paused: true})
	note("after pausing a once more", "a", "", "", lo, hi)
	for _, job := range []string{"a", "c", "{odd} job"} {
		set(slotstore.PauseParams{Job: job})
	}
	if p := read("after resuming everything"); len(p.Notes) != 0 || p.All || len(p.Jobs) != 0 {
		t.Errorf("after resuming everything: %+v", p)
	}
}

// samePauses fails the test unless got and want pause the same things with
// the same notes.
func samePauses(t *testing.T, what string, got, want slotstore.Pauses) {
	t.Helper()
	same := got.All == want.All && slices.Equal(got.Jobs, want.Jobs) && len(got.Notes) == len(want.Notes)
	for job, n := range want.Notes {
		g, ok := got.Notes[job]
		same = same && ok && g.By == n.By && g.Reason == n.Reason && g.At.Equal(n.At)
	}
	if !same {
		t.Errorf("%s: pauses %+v, want %+v", what, got, want)
	}
}
