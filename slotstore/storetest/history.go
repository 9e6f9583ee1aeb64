package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// testHistory: History lists markers newest slot first, filtered and
// limited, with every field the claims and finishes set.
func testHistory(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	sl := slots(3)
	before := time.Now()
	a0 := mustWin(t, s, "r1", req("a", sl[0], longLease)).Claim
	a1 := mustWin(t, s, "r2", req("a", sl[1], longLease)).Claim
	a2 := mustWin(t, s, "r1", req("a", sl[2], longLease)).Claim
	b1 := mustWin(t, s, "r3", req("b", sl[1], longLease)).Claim
	finishes := []slotstore.FinishParams{
		{Ref: a0.Ref, Outcome: slotstore.Succeeded, Duration: 1500 * time.Millisecond},
		{Ref: a1.Ref, Outcome: slotstore.Failed, Error: "boom", Duration: 250 * time.Millisecond},
	}
	for _, p := range finishes {
		if err := s.Finish(ctx, p); err != nil {
			t.Fatalf("finish %s: %v", stamp(p.Slot), err)
		}
	}
	if err := s.Release(ctx, b1.Ref); err != nil {
		t.Fatalf("release: %v", err)
	}
	after := time.Now()

	list := func(p slotstore.HistoryParams) []slotstore.Marker {
		t.Helper()
		ms, err := s.History(ctx, p)
		if err != nil {
			t.Fatalf("history %+v: %v", p, err)
		}
		return ms
	}
	all := list(slotstore.HistoryParams{})
	if len(all) != 4 || !all[0].Slot.Equal(sl[2]) || !all[3].Slot.Equal(sl[0]) {
		t.Fatalf("history of every job: %+v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Slot.After(all[i-1].Slot) {
			t.Errorf("history of every job: %s after %s", stamp(all[i].Slot), stamp(all[i-1].Slot))
		}
	}
	as := list(slotstore.HistoryParams{Job: "a"})
	if len(as) != 3 {
		t.Fatalf("history of a: %d markers, want 3", len(as))
	}
	for i, m := range as {
		if m.Job != "a" || !m.Slot.Equal(sl[2-i]) {
			t.Errorf("history of a, entry %d: %s@%s, want a@%s", i, m.Job, stamp(m.Slot), stamp(sl[2-i]))
		}
	}
	if lim := list(slotstore.HistoryParams{Job: "a", Limit: 2}); len(lim) != 2 || !lim[0].Slot.Equal(sl[2]) || !lim[1].Slot.Equal(sl[1]) {
		t.Errorf("history of a, limit 2: %+v", lim)
	}
	if none := list(slotstore.HistoryParams{Job: "none"}); len(none) != 0 {
		t.Errorf("history of an unknown job: %+v", none)
	}

	// Timestamps come from the store's clock; allow for its skew.
	lo, hi := before.Add(-time.Second), after.Add(time.Second)
	within := func(what string, got time.Time) {
		t.Helper()
		if got.Before(lo) || got.After(hi) {
			t.Errorf("%s = %s, want between %s and %s", what, stamp(got), stamp(lo), stamp(hi))
		}
	}
	for i, m := range as {
		within("claimed at", m.ClaimedAt)
		if want := m.Slot.Add(rules.DefaultRetain); !m.KeepUntil.Equal(want) {
			t.Errorf("entry %d: keep until %s, want %s", i, stamp(m.KeepUntil), stamp(want))
		}
		if m.LeaseEnd.IsZero() {
			t.Errorf("entry %d: no lease end", i)
		}
	}
	running, failed, succeeded := as[0], as[1], as[2]
	if m := running; m.State != slotstore.StateRunning || m.Holder != "r1" || m.Fence != a2.Fence || m.Attempt != 1 ||
		!m.FinishedAt.IsZero() || m.Outcome != "" || m.Duration != 0 {
		t.Errorf("running marker: %+v", m)
	}
	if d := running.LeaseEnd.Sub(running.ClaimedAt); d < longLease-slack || d > longLease+slack {
		t.Errorf("running marker: lease end %v after its claim, want %v", d, longLease)
	}
	if m := failed; m.State != slotstore.StateDone || m.Holder != "r2" || m.Fence != a1.Fence || m.Attempt != 1 ||
		m.Outcome != slotstore.Failed || m.Error != "boom" || m.Duration != 250*time.Millisecond {
		t.Errorf("failed marker: %+v", m)
	}
	if m := succeeded; m.State != slotstore.StateDone || m.Holder != "r1" || m.Fence != a0.Fence || m.Attempt != 1 ||
		m.Outcome != slotstore.Succeeded || m.Error != "" || m.Duration != 1500*time.Millisecond {
		t.Errorf("succeeded marker: %+v", m)
	}
	for _, m := range []slotstore.Marker{failed, succeeded} {
		within("finished at", m.FinishedAt)
		if m.FinishedAt.Before(m.ClaimedAt) {
			t.Errorf("%s finished at %s, before its claim at %s", stamp(m.Slot), stamp(m.FinishedAt), stamp(m.ClaimedAt))
		}
	}
	if m := all[1:3]; m[0].Job == m[1].Job || !m[0].Slot.Equal(sl[1]) || !m[1].Slot.Equal(sl[1]) {
		t.Errorf("history of every job, slot %s: %+v", stamp(sl[1]), m)
	}
	if m := mustFind(t, s, "b", sl[1]); m.State != slotstore.StateReleased || m.Holder != "r3" || m.Fence != b1.Fence {
		t.Errorf("released marker: %+v", m)
	}
}

// testPrune: Prune deletes markers whose retention is over, unless they run
// under a live lease, and counts them.
func testPrune(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	// Slots just after the job's generation began, kept a second: their
	// retention ends within seconds.
	first := enroll(t, s, "p")[0].From().UTC().Truncate(time.Second).Add(time.Second)
	var sl []time.Time
	for i := range 6 {
		sl = append(sl, first.Add(time.Duration(i)*time.Second))
	}
	recent := first.Add(time.Hour) // not slots(1)[0]: near the top of an hour that is one of sl
	kept := sl[5].Add(time.Second) // every short retention has ended
	short := func(slot time.Time, lease time.Duration) slotstore.ClaimRequest {
		r := req("p", slot, lease)
		r.Retain = time.Second
		return r
	}
	done := mustWin(t, s, "r1", short(sl[0], longLease)).Claim
	mustWin(t, s, "r1", short(sl[1], longLease))
	// Runs past the first Prune, ends before the second.
	expiring := mustWin(t, s, "r1", short(sl[2], time.Until(kept)+time.Second)).Marker
	expiringEnd := expiring.LeaseEnd
	released := mustWin(t, s, "r1", short(sl[3], longLease)).Claim
	retrying := mustWin(t, s, "r1", short(sl[4], longLease)).Claim
	skipOne(t, s, "r1", slotstore.SkipRequest{Job: "p", Slot: sl[5], Reason: "missed", Retain: time.Second})
	keptClaim := mustWin(t, s, "r1", req("p", recent, longLease)).Claim
	for _, ref := range []slotstore.Ref{done.Ref, keptClaim.Ref} {
		if err := s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}); err != nil {
			t.Fatalf("finish: %v", err)
		}
	}
	if err := s.Release(ctx, released.Ref); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Due when the expiring lease ends: kept until then, like a running
	// slot.
	finish(t, s, slotstore.FinishParams{Ref: retrying.Ref, Outcome: slotstore.Failed, RetryAt: expiringEnd})

	prune := func(want int, present ...time.Time) {
		t.Helper()
		n, err := s.Prune(ctx)
		if err != nil || n != want {
			t.Errorf("prune: %d, %v; want %d", n, err, want)
		}
		ms, err := s.History(ctx, slotstore.HistoryParams{Job: "p"})
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, stamp(m.Slot))
		}
		var wantSlots []string
		for _, slot := range present {
			wantSlots = append(wantSlots, stamp(slot))
		}
		if !slices.Equal(got, wantSlots) {
			t.Errorf("markers after prune: %v, want %v", got, wantSlots)
		}
	}
	// Nothing before the retention ends.
	prune(0, recent, sl[5], sl[4], sl[3], sl[2], sl[1], sl[0])
	waitStoreTime(t, s, "p-clock", kept.Add(time.Millisecond))
	// The finished, released and skipped markers go; the running ones and
	// the one waiting for its retry stay.
	prune(3, recent, sl[4], sl[2], sl[1])
	waitPast(t, s, expiring)
	// The running marker whose lease expired goes too, and the retrying one
	// once its retry is due.
	prune(2, recent, sl[1])
	prune(0, recent, sl[1])
}

// testHistoryState: History filters by state, with or without a job, so the
// engine can find running markers without reading every finished one.
func testHistoryState(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	sl := slots(4)
	var running []slotstore.Ref
	for i, job := range []string{"hs-a", "hs-a", "hs-b", "hs-b"} {
		c := mustWin(t, s, "r1", req(job, sl[i], longLease)).Claim
		if i%2 == 0 {
			if err := s.Finish(ctx, slotstore.FinishParams{Ref: c.Ref, Outcome: slotstore.Succeeded}); err != nil {
				t.Fatal(err)
			}
		} else {
			running = append(running, c.Ref)
		}
	}
	got, err := s.History(ctx, slotstore.HistoryParams{State: slotstore.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Job != "hs-b" || got[1].Job != "hs-a" {
		t.Fatalf("running markers %+v, want hs-b then hs-a", got)
	}
	for _, m := range got {
		if m.State != slotstore.StateRunning {
			t.Errorf("state filter returned %+v", m)
		}
	}
	got, err = s.History(ctx, slotstore.HistoryParams{Job: "hs-a", State: slotstore.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Fence != running[0].Fence || !got[0].Slot.Equal(running[0].Slot) {
		t.Errorf("running markers of hs-a: %+v", got)
	}
	got, err = s.History(ctx, slotstore.HistoryParams{Job: "hs-b", State: slotstore.StateDone})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Slot.Equal(sl[2]) {
		t.Errorf("done markers of hs-b: %+v", got)
	}

	// The states of the policies: hs-c's slot 0 is skipped, 1 replaced by
	// 2, which is retrying.
	skipOne(t, s, "r1", slotstore.SkipRequest{Job: "hs-c", Slot: sl[0], Reason: "missed"})
	replaced := mustWin(t, s, "r1", req("hs-c", sl[1], longLease)).Claim
	retrying := mustWin(t, s, "r1", overlapReq("hs-c", sl[2], longLease, policy.OverlapReplace)).Claim
	finish(t, s, slotstore.FinishParams{Ref: retrying.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(time.Hour)})
	for state, wantRef := range map[slotstore.State]slotstore.Ref{
		slotstore.StateSkipped:  {Job: "hs-c", Slot: sl[0]},
		slotstore.StateReplaced: replaced.Ref,
		slotstore.StateRetrying: retrying.Ref,
	} {
		for _, job := range []string{"", "hs-c"} {
			got, err := s.History(ctx, slotstore.HistoryParams{Job: job, State: state})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !sameRefs([]slotstore.Ref{got[0].Ref()}, []slotstore.Ref{wantRef}) || got[0].State != state {
				t.Errorf("%s markers of %q: %+v, want %v", state, job, got, wantRef)
			}
		}
	}
	if got, err := s.History(ctx, slotstore.HistoryParams{Job: "hs-c", State: slotstore.StateRunning}); err != nil || len(got) != 0 {
		t.Errorf("running markers of hs-c: %+v, %v; want none", got, err)
	}
}

// testManual: a manual claim's marker says so, through takeovers, in
// History, and when overlap skips it.
func testManual(t *testing.T, s slotstore.Store) {
	const job = "manual"
	sl := slots(3)
	r := req(job, sl[0], shortLease)
	r.Manual = true
	first := mustWin(t, s, "r1", r)
	if !first.Marker.Manual {
		t.Errorf("manual claim: marker %+v", first.Marker)
	}
	plain := mustWin(t, s, "r1", req(job, sl[1], longLease))
	if plain.Marker.Manual {
		t.Errorf("scheduled claim: marker %+v", plain.Marker)
	}
	// A takeover by a scheduled claim keeps the slot manual.
	takeover := claimAfterExpiry(t, s, "r2", req(job, sl[0], longLease))
	wantStatus(t, "takeover of a manual slot", takeover, slotstore.Won)
	if !takeover.Marker.Manual || takeover.Claim.Attempt != 2 {
		t.Errorf("takeover of a manual slot: marker %+v", takeover.Marker)
	}
	// A manual claim obeys overlap.
	forbid := overlapReq(job, sl[2], longLease, policy.OverlapForbid)
	forbid.Manual = true
	res := claimOne(t, s, "r3", forbid)
	wantStatus(t, "manual forbid claim while another slot runs", res, slotstore.Skipped)
	if !res.Marker.Manual || res.Marker.Reason != slotstore.ReasonOverlap {
		t.Errorf("skipped manual claim: marker %+v", res.Marker)
	}
	for i, want := range []bool{true, false, true} {
		if m := mustFind(t, s, job, sl[i]); m.Manual != want {
			t.Errorf("history of slot %d: manual %v, want %v (%+v)", i, m.Manual, want, m)
		}
	}
}

// testHistoryBefore: Before pages every kind of History, by job, by state
// and store-wide, to the slots before it.
func testHistoryBefore(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	sl := slots(6)
	for i, sl := range sl {
		for _, job := range []string{"hb-a", "hb-b"} {
			c := mustWin(t, s, "r1", req(job, sl, longLease)).Claim
			if i%2 == 0 {
				if err := s.Finish(ctx, slotstore.FinishParams{Ref: c.Ref, Outcome: slotstore.Succeeded}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, tc := range []struct {
		p    slotstore.HistoryParams
		want []time.Time // newest first; each slot once per job listed
		jobs int
	}{
		{slotstore.HistoryParams{Before: sl[4]}, []time.Time{sl[3], sl[3], sl[2], sl[2], sl[1], sl[1], sl[0], sl[0]}, 2},
		{slotstore.HistoryParams{Before: sl[4], Limit: 3}, []time.Time{sl[3], sl[3], sl[2]}, 2},
		{slotstore.HistoryParams{Before: sl[4].Add(500 * time.Millisecond), Limit: 2}, []time.Time{sl[4], sl[4]}, 2},
		{slotstore.HistoryParams{Job: "hb-a", Before: sl[5]}, []time.Time{sl[4], sl[3], sl[2], sl[1], sl[0]}, 1},
		{slotstore.HistoryParams{State: slotstore.StateRunning, Before: sl[5]}, []time.Time{sl[3], sl[3], sl[1], sl[1]}, 2},
		{slotstore.HistoryParams{State: slotstore.StateRunning, Before: sl[3], Limit: 1}, []time.Time{sl[1]}, 2},
		{slotstore.HistoryParams{Job: "hb-b", State: slotstore.StateDone, Before: sl[4]}, []time.Time{sl[2], sl[0]}, 1},
		{slotstore.HistoryParams{Before: sl[0]}, nil, 0},
	} {
		got, err := s.History(ctx, tc.p)
		if err != nil {
			t.Fatalf("history %+v: %v", tc.p, err)
		}
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].Slot.Equal(tc.want[i]) && (tc.jobs == 2 || got[i].Job == tc.p.Job) &&
				(tc.p.State == "" || got[i].State == tc.p.State)
		}
		if !ok {
			var have []string
			for _, m := range got {
				have = append(have, m.Job+"@"+stamp(m.Slot)+" "+string(m.State))
			}
			t.Errorf("history %+v: %v", tc.p, have)
		}
	}
}
