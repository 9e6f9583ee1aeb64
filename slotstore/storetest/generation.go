package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// testGeneration: Enroll begins a job's generation once; a claim never
// creates the first marker of a slot older than its job's generation but
// records it skipped for data loss, and leaves slots that have a marker to
// the ordinary rules.
func testGeneration(t *testing.T, s slotstore.Store) {
	before := time.Now()
	gens := enroll(t, s, "g1", "g2")
	after := time.Now()
	born := gens[0].Born
	if born.Before(before.Add(-time.Second)) || born.After(after.Add(time.Second)) {
		t.Errorf("generation born at %s, want between %s and %s", stamp(born), stamp(before), stamp(after))
	}
	again := enroll(t, s, "g2", "g1")
	if !again[1].Born.Equal(born) || !again[0].Born.Equal(gens[1].Born) {
		t.Errorf("enrolled again: %+v, want the first generations %+v", again, gens)
	}
	if _, err := s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"g3", ""}}); !errors.Is(err, slotstore.ErrInvalid) {
		t.Errorf("enroll of an empty job: %v, want ErrInvalid", err)
	}

	old := born.Add(-time.Minute).UTC().Truncate(time.Second)
	res := claimOne(t, s, "r1", req("g1", old, longLease))
	wantStatus(t, "claim of a slot older than the generation", res, slotstore.Skipped)
	if m := res.Marker; m.State != slotstore.StateSkipped || m.Reason != slotstore.ReasonDataLoss || m.Fence != 0 {
		t.Errorf("slot older than the generation: marker %+v, want skipped for data loss", m)
	}
	wantStatus(t, "claim of it again", claimOne(t, s, "r2", req("g1", old, longLease)), slotstore.Skipped)
	if m := mustFind(t, s, "g1", old); m.Reason != slotstore.ReasonDataLoss {
		t.Errorf("history of the slot: %+v", m)
	}
	// Takeover-only claims create nothing, and skips are recorded as
	// asked, whatever the generation.
	wantStatus(t, "takeover-only claim", claimOne(t, s, "r1",
		slotstore.ClaimRequest{Job: "g2", Slot: old, Lease: longLease, TakeoverOnly: true}), slotstore.Absent)
	sk := skipOne(t, s, "r1", slotstore.SkipRequest{Job: "g2", Slot: old.Add(-time.Second), Reason: "missed"})
	if sk.Status != slotstore.Skipped || sk.Marker.Reason != "missed" {
		t.Errorf("skip of an old slot: %+v", sk)
	}
	// A term (a duty's lease) is claimed whatever the generation, and so
	// is a slot of a job whose effect is once per slot.
	mustWin(t, s, "r1", slotstore.ClaimRequest{Job: "g2", Slot: time.Unix(1, 0), Lease: longLease, Term: true})
	older := old.Add(-time.Minute)
	once := req("g1", older, longLease)
	once.RunsAfterDataLoss = true
	if c := mustWin(t, s, "r1", once).Claim; c.Attempt != 1 || c.Fence <= 0 {
		t.Errorf("slot older than the generation, of a job that runs after a loss: %+v, want attempt 1 and a fence", c)
	}
	once.Slot = old // recorded skipped for data loss already: a marker, left to the ordinary rules
	wantStatus(t, "a job that runs after a loss, of a slot skipped for it", claimOne(t, s, "r1", once), slotstore.Skipped)
	// A slot less than ClaimLead after the generation began is not covered
	// (a claim of it could have been made ahead, before the generation);
	// one from then on is claimed as usual.
	early := born.Add(slotstore.ClaimLead).Add(-time.Nanosecond).UTC().Truncate(time.Second)
	res = claimOne(t, s, "r1", req("g1", early, longLease))
	if res.Status != slotstore.Skipped || res.Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("slot %s, less than ClaimLead after the generation began at %s: %v %q, want skipped for data loss",
			stamp(early), stamp(born), res.Status, res.Marker.Reason)
	}
	mustWin(t, s, "r1", req("g1", early.Add(time.Second), longLease))
	mustWin(t, s, "r1", req("g2", slots(1)[0], longLease))

	// A job claimed before it was enrolled: its generation begins with
	// that claim.
	res = claimOne(t, s, "r1", req("g4", time.Now().Add(-time.Hour), longLease))
	wantStatus(t, "claim of an old slot of a job never enrolled", res, slotstore.Skipped)
	if res.Marker.Reason != slotstore.ReasonDataLoss {
		t.Errorf("old slot of a new job: %+v", res.Marker)
	}
	if g := enroll(t, s, "g4")[0]; g.Born.Before(before.Add(-time.Second)) {
		t.Errorf("generation of a job first claimed now: born %s", stamp(g.Born))
	}
}

// testSkipNotBefore: a skip that comes before its NotBefore by the store's
// clock records nothing and says how long to wait; one after it records
// the slot as usual.
func testSkipNotBefore(t *testing.T, s slotstore.Store) {
	const job = "notbefore"
	sl := slots(3)
	held := mustWin(t, s, "r1", req(job, sl[2], longLease))
	r := slotstore.SkipRequest{Job: job, Slot: sl[0], Reason: "missed", NotBefore: time.Now().Add(time.Hour)}
	res := skipOne(t, s, "r2", r)
	if res.Status != slotstore.NotYet || res.Remaining < time.Hour-time.Minute || res.Remaining > time.Hour+time.Second {
		t.Fatalf("early skip: %v, remaining %v; want not yet, about an hour", res.Status, res.Remaining)
	}
	if !errors.Is(res.Err(), slotstore.ErrSlotTaken) {
		t.Errorf("early skip: Err() = %v", res.Err())
	}
	if _, ok := find(t, s, job, sl[0]); ok {
		t.Fatal("an early skip recorded a marker")
	}
	// The slot is still free to claim.
	mustWin(t, s, "r3", req(job, sl[0], longLease))

	r = slotstore.SkipRequest{Job: job, Slot: sl[1], Reason: "missed", NotBefore: time.Now().Add(-time.Second)}
	if res := skipOne(t, s, "r2", r); res.Status != slotstore.Skipped || res.Marker.Reason != "missed" {
		t.Errorf("skip after its NotBefore: %+v", res)
	}
	// A slot with a marker answers as before, early or not.
	r = slotstore.SkipRequest{Job: job, Slot: sl[2], Reason: "missed", NotBefore: time.Now().Add(time.Hour)}
	if res := skipOne(t, s, "r2", r); res.Status != slotstore.Held || res.Marker.Fence != held.Claim.Fence {
		t.Errorf("early skip of a held slot: %+v", res)
	}
}

// testClaimNotBefore: a claim that would create a slot's first marker
// before its NotBefore by the store's clock creates nothing and says how
// long to wait; after it, or for a slot with a marker, the claim decides as
// usual.
func testClaimNotBefore(t *testing.T, s slotstore.Store) {
	const job = "claimnb"
	sl := slots(2)
	early := req(job, sl[0], longLease)
	early.NotBefore = time.Now().Add(time.Hour)
	res := claimOne(t, s, "r1", early)
	if res.Status != slotstore.NotYet || res.Remaining < time.Hour-time.Minute || res.Remaining > time.Hour+time.Second {
		t.Fatalf("early claim: %v, remaining %v; want not yet, about an hour", res.Status, res.Remaining)
	}
	if _, ok := find(t, s, job, sl[0]); ok {
		t.Fatal("an early claim recorded a marker")
	}
	due := early
	due.NotBefore = time.Now().Add(-time.Second)
	won := mustWin(t, s, "r2", due)
	// A slot with a marker answers as before, early or not.
	if res := claimOne(t, s, "r1", early); res.Status != slotstore.Held || res.Marker.Fence != won.Claim.Fence {
		t.Errorf("early claim of a held slot: %+v", res)
	}
}

// testRenewFinished: a renewal of a slot its own claim finished says so
// (ErrFinished), distinct from a lost lease; Release and stale fences
// still answer ErrLeaseLost.
func testRenewFinished(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	sl := slots(2)
	done := mustWin(t, s, "r1", req("rf", sl[0], longLease)).Claim
	finish(t, s, slotstore.FinishParams{Ref: done.Ref, Outcome: slotstore.Succeeded})
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: done.Ref, Lease: longLease}); !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew of a slot done under its fence: %v, want ErrFinished", err)
	}
	stale := done.Ref
	stale.Fence++
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: stale, Lease: longLease}); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("renew of a done slot under another fence: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, done.Ref); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Errorf("release of a done slot: %v, want ErrLeaseLost", err)
	}
	retrying := mustWin(t, s, "r1", req("rf", sl[1], longLease)).Claim
	finish(t, s, slotstore.FinishParams{Ref: retrying.Ref, Outcome: slotstore.Failed, RetryAt: time.Now().Add(time.Hour)})
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: retrying.Ref, Lease: longLease}); !errors.Is(err, slotstore.ErrFinished) {
		t.Errorf("renew of a slot retrying under its fence: %v, want ErrFinished", err)
	}
	if m := mustFind(t, s, "rf", sl[1]); m.State != slotstore.StateRetrying {
		t.Errorf("renew changed a retrying marker: %+v", m)
	}
}

// testIncarnation: the marker keeps the incarnation of its current claim.
func testIncarnation(t *testing.T, s slotstore.Store) {
	slot := slots(1)[0]
	r := req("inc", slot, shortLease)
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "worker", Incarnation: "a1", Requests: []slotstore.ClaimRequest{r}})
	if err != nil || len(res) != 1 || res[0].Status != slotstore.Won {
		t.Fatalf("claim: %v, %v", res, err)
	}
	if res[0].Marker.Incarnation != "a1" || mustFind(t, s, "inc", slot).Incarnation != "a1" {
		t.Errorf("marker incarnation %q, history %q; want a1", res[0].Marker.Incarnation, mustFind(t, s, "inc", slot).Incarnation)
	}
	held := claimOne(t, s, "worker", r)
	if held.Status != slotstore.Held || held.Marker.Incarnation != "a1" {
		t.Errorf("losing claim: %v, incarnation %q", held.Status, held.Marker.Incarnation)
	}
	waitPast(t, s, res[0].Marker)
	res, err = s.Claim(t.Context(), slotstore.ClaimParams{Replica: "worker", Incarnation: "b2", Requests: []slotstore.ClaimRequest{r}})
	if err != nil || len(res) != 1 || res[0].Status != slotstore.Won || res[0].Marker.Incarnation != "b2" {
		t.Fatalf("takeover by another incarnation: %+v, %v", res, err)
	}
}

// testEnrollConcurrently: replicas that start together and enroll one new
// job at once all get its one generation.
func testEnrollConcurrently(t *testing.T, s slotstore.Store) {
	const n = 8
	var wg sync.WaitGroup
	gens := make([][]slotstore.Generation, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			gens[i], errs[i] = s.Enroll(t.Context(), slotstore.EnrollParams{Jobs: []string{"together", fmt.Sprint("own", i)}})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || len(gens[i]) != 2 || gens[i][0].Job != "together" || gens[i][0].Born.IsZero() {
			t.Fatalf("enroll %d: %+v, %v", i, gens[i], errs[i])
		}
		if !gens[i][0].Born.Equal(gens[0][0].Born) {
			t.Errorf("enroll %d: born %s, enroll 0: %s", i, stamp(gens[i][0].Born), stamp(gens[0][0].Born))
		}
	}
}

// testEnrollNewest: Enroll reports the slot of each job's newest marker,
// whatever its state, and zero for a job with none.
func testEnrollNewest(t *testing.T, s slotstore.Store) {
	ss := slots(4)
	enroll(t, s, "n1", "n2", "n3")
	mustWin(t, s, "r1", req("n1", ss[0], longLease))
	c := mustWin(t, s, "r1", req("n1", ss[2], longLease))
	if err := s.Finish(t.Context(), slotstore.FinishParams{Ref: c.Claim.Ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	mustWin(t, s, "r1", req("n1", ss[1], longLease))
	skipOne(t, s, "r1", slotstore.SkipRequest{Job: "n2", Slot: ss[3], Reason: "missed"})
	mustWin(t, s, "r1", req("n2", ss[1], longLease))
	gens := enroll(t, s, "n3", "n1", "n2")
	want := []time.Time{{}, ss[2], ss[3]}
	for i, g := range gens {
		if !g.Newest.Equal(want[i]) {
			t.Errorf("newest slot of %s: %s, want %s", g.Job, stamp(g.Newest), stamp(want[i]))
		}
	}
}

// testClaimNotAfter: a claim that would create a slot's first marker after
// its NotAfter by the store's clock records the slot skipped, ReasonLate,
// with no fence, and the slot never runs; one within it wins. NotAfter
// binds first markers only: a takeover after it still wins. One before
// NotBefore is invalid and changes nothing.
func testClaimNotAfter(t *testing.T, s slotstore.Store) {
	const job = "claimna"
	sl := slots(4)
	late := req(job, sl[0], longLease)
	late.NotAfter = time.Now().Add(-time.Second)
	res := claimOne(t, s, "r1", late)
	wantStatus(t, "claim after its window", res, slotstore.Skipped)
	m := mustFind(t, s, job, sl[0])
	if m.State != slotstore.StateSkipped || m.Reason != slotstore.ReasonLate || m.Holder != "r1" || m.Fence != 0 ||
		m.Attempt != 0 || !m.Slot.Equal(sl[0]) || res.Marker.Reason != slotstore.ReasonLate {
		t.Errorf("slot claimed after its window: result %+v, marker %+v; want skipped %q by r1, no fence",
			res.Marker, m, slotstore.ReasonLate)
	}
	// Final: a claim without a window, or in it, does not run it.
	wantStatus(t, "claim of a slot recorded late", claimOne(t, s, "r2", req(job, sl[0], longLease)), slotstore.Skipped)

	// Within the window, to the microsecond the stores keep: it wins.
	open := req(job, sl[1], shortLease)
	open.NotBefore = time.Now().Add(-time.Minute)
	open.NotAfter = time.Now().Add(time.Hour).Add(999 * time.Nanosecond)
	won := mustWin(t, s, "r1", open)

	// A takeover is not bound by the window it was first claimed in.
	taken := open
	taken.NotAfter = time.Now().Add(-time.Millisecond)
	waitPast(t, s, won.Marker)
	if res := claimOne(t, s, "r2", taken); res.Status != slotstore.Won || res.Claim.Attempt != 2 ||
		res.Claim.Fence <= won.Claim.Fence {
		t.Errorf("takeover after the window: %v, claim %+v; want won, attempt 2, a higher fence", res.Status, res.Claim)
	}

	// One batch: each request by its own window.
	due, past := req(job, sl[2], longLease), req(job, sl[3], longLease)
	due.NotAfter, past.NotAfter = time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	got, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r3", Requests: []slotstore.ClaimRequest{due, past}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Status != slotstore.Won || got[1].Status != slotstore.Skipped ||
		got[1].Marker.Reason != slotstore.ReasonLate {
		t.Errorf("batch of a due claim and a late one: %+v", got)
	}

	bad := req("claimna-bad", sl[0], longLease)
	bad.NotBefore, bad.NotAfter = time.Now(), time.Now().Add(-time.Second)
	if _, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: "r1", Requests: []slotstore.ClaimRequest{bad}}); !errors.Is(err, slotstore.ErrInvalid) {
		t.Errorf("claim whose NotAfter is before its NotBefore: %v, want ErrInvalid", err)
	}
	noMarker(t, "invalid claim", s, "claimna-bad", sl[0])
}
