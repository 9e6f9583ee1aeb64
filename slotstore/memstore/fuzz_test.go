package memstore_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// FuzzStore runs a program of claims, skips, renewals, finishes, releases,
// enrolments, prunes and clock steps, with good and bad arguments, on a memory
// store, whose claims are the decision table in Go, and checks the contract
// after every call (see model.run): fences grow per job, no claim wins a slot
// held by a live lease or final, no claim creates a slot older than its job's
// generation, a fenced mutation answers as the slotstore package documentation
// says, a prune deletes exactly the prunable markers, and a call that fails
// changes nothing. No call may panic.
func FuzzStore(f *testing.F) {
	// Programs after TestDecide's rows and storetest's cases; a byte is one
	// choice of the reader, 0 the usual one (job a, lease and retention a
	// minute, default policies).
	finishOK, finishRetry := []byte{opFinish, 0, 0, 0, 0}, []byte{opFinish, 0, 0, 3, 1}
	release, renew, tickHour := []byte{opRelease, 0, 0}, []byte{opRenew, 0, 0, 1}, []byte{opTick, 2}
	for _, prog := range [][]byte{
		// won, done, final
		slices.Concat(claim(0, 0, 0, 0), finishOK, claim(0, 0, 0, 0)),
		// held by a live lease, renewed
		slices.Concat(claim(0, 0, 0, 0), claim(0, 0, 0, 0), renew, claim(0, 0, 0, 0)),
		// taken over once the lease expired; the old fence is lost
		slices.Concat(claim(0, 0, 0, 0), tickHour, claim(0, 0, 0, 0), finishOK),
		// on_crash skip: abandoned
		slices.Concat(claim(0, 0, 0, 0), tickHour, claim(0, 0, 2, 0)),
		// forbid while another slot runs; replace
		slices.Concat(claim(0, 0, 0, 0), claim(0, 1, 0, 2)),
		slices.Concat(claim(0, 0, 0, 0), claim(0, 1, 0, 3), finishOK),
		// a retry: waiting, then won
		slices.Concat(claim(0, 0, 0, 0), finishRetry, claim(0, 0, 0, 0), tickHour, claim(0, 0, 0, 0)),
		// released, won again; the old fence is lost
		slices.Concat(claim(0, 0, 0, 0), release, claim(0, 0, 0, 0), renew),
		// a slot before the generation; a slot given with a fraction in another zone
		slices.Concat(claim(0, 4, 0, 0), claim(1, 5, 0, 0)),
		// a skip not yet due, then recorded; a claim of it
		slices.Concat(skip(0, 0, 3), tickHour, skip(0, 0, 3), claim(0, 0, 0, 0)),
		// a slot near the zero Time, before the generation
		slices.Concat(claim(0, 6, 0, 0), renew, finishOK),
		// enrolment, a claim with no job, a prune
		slices.Concat([]byte{opEnroll, 2, 0, 1}, claim(3, 0, 0, 0), claim(1, 7, 0, 0), []byte{opTick, 4, opPrune}),
		// a missed slot backfilled once: held, then finished
		slices.Concat(claim(0, 1, 0, 0), skip(0, 0, 0), backfill(0, 0, 0), backfill(0, 0, 0), finishOK, backfill(0, 0, 0)),
		// a slot skipped for data loss, and one skipped before the
		// generation began, are never backfilled
		slices.Concat(claim(0, 4, 0, 0), backfill(0, 4, 0), skip(1, 0, 0), tickHour, backfill(1, 0, 0)),
		// nor is a slot older than the generation, whenever it was skipped
		slices.Concat(claim(0, 0, 0, 0), skip(0, 4, 0), backfill(0, 4, 0)),
		// a backfill with forbid while another slot runs; with replace
		slices.Concat(claim(0, 1, 0, 0), skip(0, 0, 0), backfill(0, 0, 2), backfill(0, 0, 3), backfill(0, 0, 1)),
		// once a slot's retention (here a minute) has ended, a backfill wins
		// no skipped slot and creates no marker; it takes over an expired
		// lease as any claim does
		slices.Concat(claim(0, 1, 0, 0), skip(0, 0, 0), []byte{opTick, 3}, backfill(0, 0, 0), backfill(0, 2, 0),
			backfill(0, 1, 0)),
	} {
		f.Add(prog)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 1024 {
			return // a few hundred calls say what a longer program would
		}
		m := newModel(t)
		p := &reader{b: prog}
		for step := 0; len(p.b) > 0; step++ {
			m.step = step
			m.run(p)
		}
	})
}

// reader reads a program as a stream of small choices; past its end every
// choice is 0.
type reader struct{ b []byte }

func (r *reader) pick(n int) int {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return int(c) % n
}

func (r *reader) flag() bool { return r.pick(2) == 1 }

var (
	start     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base      = start.Add(time.Hour) // slots after the generations begin
	elsewhere = time.FixedZone("elsewhere", -9*3600-1800)
	durations = []time.Duration{time.Minute, time.Hour, time.Second, time.Nanosecond, 0, -time.Second,
		math.MaxInt64, math.MinInt64}
)

func (r *reader) job() string { return []string{"a", "b", "a", ""}[r.pick(4)] }

func (r *reader) duration() time.Duration { return durations[r.pick(len(durations))] }

// slot is one of a few slots of the jobs, or an odd instant.
func (r *reader) slot() time.Time {
	switch r.pick(8) {
	case 4: // before the generations began
		return start.Add(-time.Minute)
	case 5: // a slot of the others, given with a fraction and in another zone
		return base.Add(time.Duration(r.pick(256)) * 4 * time.Millisecond).In(elsewhere)
	case 6: // at or just after the zero Time
		return time.Time{}.Add(time.Duration(r.pick(256)) * 8 * time.Millisecond)
	case 7: // far away
		return []time.Time{time.Unix(math.MaxInt32*1000, 0), time.Unix(-math.MaxInt32*1000, 0)}[r.pick(2)]
	}
	return base.Add(time.Duration(r.pick(4)) * time.Minute)
}

// instant is an instant around now (the store's clock).
func (r *reader) instant(now time.Time) time.Time {
	return []time.Time{{}, now.Add(-time.Second), now, now.Add(time.Minute), now.Add(math.MaxInt64)}[r.pick(5)]
}

// claimRequest reads a claim request. One choice says whether it is a term
// (3 or 7) and whether a backfill (6 or 7), so a program written before
// claims could backfill reads as it did, but for its 6s and 7s.
func (r *reader) claimRequest() slotstore.ClaimRequest {
	c := slotstore.ClaimRequest{
		Job: r.job(), Slot: r.slot(), Lease: r.duration(),
		OnCrash:     []policy.OnCrash{"", policy.OnCrashRetry, policy.OnCrashSkip, "crash"}[r.pick(4)],
		MaxAttempts: []int{0, 1, 2, -1}[r.pick(4)], Retain: r.duration(), TakeoverOnly: r.flag(),
		Overlap: []policy.Overlap{"", policy.OverlapAllow, policy.OverlapForbid, policy.OverlapReplace,
			"sometimes"}[r.pick(5)],
	}
	t := r.pick(8)
	c.Term, c.Backfill, c.Manual = t%4 == 3, t >= 6, r.flag()
	return c
}

func (r *reader) skipRequest(now time.Time) slotstore.SkipRequest {
	return slotstore.SkipRequest{Job: r.job(), Slot: r.slot(), Reason: []string{"missed", "catch_up", ""}[r.pick(3)],
		Retain: r.duration(), NotBefore: r.instant(now)}
}

// ref is a claim won earlier, perhaps with another fence, or made up.
func (r *reader) ref(won []slotstore.Ref) slotstore.Ref {
	if n := r.pick(4); n < 3 && len(won) > 0 {
		ref := won[r.pick(len(won))]
		ref.Fence = []int64{ref.Fence, ref.Fence + 1, 0}[n]
		return ref
	}
	return slotstore.Ref{Job: r.job(), Slot: r.slot(), Fence: int64(r.pick(4) - 1)}
}

// The calls of a program, as model.run reads them.
const (
	opClaim byte = iota
	opRenew
	opFinish
	opRelease
	opSkip
	opTick
	opEnroll
	opPrune
)

// slotChoice is the choices of reader.slot for slot choice n (for 0-3, the
// slot n minutes after base).
func slotChoice(n byte) []byte {
	if n == 4 {
		return []byte{n}
	}
	return []byte{n, n}
}

// claim is a batch of one claim by r0 of job's slot with the given choices.
func claim(job, slot, onCrash, overlap byte) []byte {
	return slices.Concat([]byte{opClaim, 0, 0, 0, job}, slotChoice(slot), []byte{0, onCrash, 0, 0, 0, overlap, 0, 0})
}

// backfill is a batch of one Backfill claim by r0 of job's slot, with an
// overlap choice.
func backfill(job, slot, overlap byte) []byte {
	return slices.Concat([]byte{opClaim, 0, 0, 0, job}, slotChoice(slot), []byte{0, 0, 0, 0, 0, overlap, 6, 0})
}

// skip is a batch of one skip by r0 of job's slot, with a NotBefore choice.
func skip(job, slot, notBefore byte) []byte {
	return slices.Concat([]byte{opSkip, 0, 0, job}, slotChoice(slot), []byte{0, 0, notBefore})
}
