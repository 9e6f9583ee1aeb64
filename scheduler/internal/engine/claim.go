// Claim dispatch: a wake's due slots go to the store in batches —
// takeovers apart from new slots, several batches at once from goroutines
// of their own — and the loop goroutine acts on each answer as it comes.

package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

const (
	// maxBatch caps the claims (and skips, and enrolments) sent in one
	// store call.
	maxBatch = 1000
	// maxSolo bounds the takeovers whose last claim failed that a wake
	// sends each in a call of its own; the rest go together.
	maxSolo = 8
	// maxStoreWait bounds any one store call of the loop; a call for slots
	// of a job waits at most half its lease (claimTimeout), and a read of
	// the pauses, which every job's new slots wait for, half the shortest
	// lease.
	maxStoreWait = 5 * time.Second
	// claimAhead is how long before a slot's instant the loop claims it,
	// so that the winner holds it by then and starts it at that instant
	// rather than a store round trip after (and a burst of a second's
	// slots is claimed before the second, not during it). At most
	// slotstore.ClaimLead, so a replica whose clock runs up to their
	// difference ahead of the store's is not told "not yet".
	claimAhead = 500 * time.Millisecond
)

// ahead is how long before the instant a slot of p starts at (the slot, and
// its jitter) the loop claims it: claimAhead, at most a quarter of the
// lease, which counts from the claim (so its first renewal comes before
// the run starts). A job whose claims decide by what else of it runs
// (overlap forbid, replace, queue) is claimed at the instant, where that
// is judged.
func (p *plan) ahead() time.Duration {
	if p.overlap != policy.OverlapAllow && p.overlap != "" {
		return 0
	}
	return min(claimAhead, p.lease/4)
}

// fireAt is when the loop claims slot of p, a slot of its schedule.
func (p *plan) fireAt(slot time.Time) time.Time { return slot.Add(p.jitter - p.ahead()) }

// notBefore is the NotBefore of e's claims: ClaimLead before the slot for
// a slot claimed ahead, the slot otherwise (guarantee 7, and 3 after a
// loss: slotstore.Generation.Covers).
func (e *entry) notBefore() time.Time {
	if e.kind != watch && e.p.ahead() > 0 {
		return e.slot.Add(-slotstore.ClaimLead)
	}
	return e.slot
}

// claimAll claims a wake's slots and acts on every result. Takeovers and
// new slots go in calls of their own, sent at once: a takeover never waits
// behind new slots whose markers the store must wait for (a CompleteTx
// holding a row), and a burst's batches overlap.
func (l *loop) claimAll(ctx context.Context, batch []*entry) {
	if len(batch) == 0 || ctx.Err() != nil {
		return
	}
	var calls [][]*entry
	for _, takeovers := range []bool{true, false} {
		var part []*entry
		for _, e := range batch {
			switch {
			case (e.kind == watch) != takeovers:
			case takeovers && e.tries > 0 && len(calls) < maxSolo:
				// Its last claim failed, most likely waiting on a row a
				// transaction holds: alone, so it holds up no other.
				calls = append(calls, []*entry{e})
			default:
				part = append(part, e)
			}
		}
		for len(part) > 0 {
			n := min(len(part), maxBatch)
			calls = append(calls, part[:n])
			part = part[n:]
		}
	}
	if len(calls) == 1 {
		l.claim(ctx, calls[0], l.send(ctx, calls[0]))
		return
	}
	// Each answer is acted on as it comes, on this goroutine: a won
	// takeover starts while a slower batch is still out.
	type answered struct {
		batch []*entry
		a     claimAnswer
	}
	answers := make(chan answered, len(calls))
	for _, c := range calls {
		go func() { answers <- answered{c, l.send(ctx, c)} }()
	}
	for range calls {
		r := <-answers
		l.claim(ctx, r.batch, r.a)
	}
}

// claimAnswer is the store's answer to one batch of claims.
type claimAnswer struct {
	results []slotstore.ClaimResult
	err     error
	// sent is when the claim was sent, and arrived when its answer came.
	sent, arrived time.Time
	// answered is the earliest answer's time its results tell
	// (slotstore.ClaimResult.Answered), zero for none: one for the
	// answer, so that its runs of one instant share a gate though a store
	// answered in parts (a Redis Cluster's hash slots).
	answered time.Time
}

// send claims one batch. It reads the entries and changes nothing of the
// loop's, so the batches of a wake may be sent from goroutines of their own.
func (l *loop) send(ctx context.Context, batch []*entry) claimAnswer {
	reqs := make([]slotstore.ClaimRequest, len(batch))
	for i, e := range batch {
		reqs[i] = slotstore.ClaimRequest{
			Job: e.p.name, Slot: e.slot, Lease: e.p.lease, OnCrash: e.p.onCrash,
			MaxAttempts: e.p.maxAtt, Retain: e.p.history, Overlap: e.p.overlap,
			// A watched slot was claimed before: never create its marker
			// anew, whatever happened to the old one.
			TakeoverOnly: e.kind == watch && !e.anew,
			// Its effect is once per slot: exempt from the generation rules.
			RunsAfterDataLoss: e.p.afterLoss,
			// Not before the slot (less ClaimLead, claimed ahead) by the
			// store's clock, however far ahead this replica's clock runs
			// (guarantee 3 after a loss).
			NotBefore: e.notBefore(),
			Spec:      e.p.spec.Fingerprint,
		}
		if e.kind != watch {
			// Nor after its window by the store's clock, however far
			// behind this replica's clock runs: a slot no replica started
			// in time is recorded missed, not run late.
			reqs[i].NotAfter = e.slot.Add(e.p.deadline)
		}
	}
	a := claimAnswer{sent: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, claimTimeout(batch))
	a.results, a.err = l.st.Claim(cctx, slotstore.ClaimParams{Replica: l.s.replica, Incarnation: l.s.incarnation, Requests: reqs})
	a.arrived = time.Now()
	cancel()
	if a.err == nil && len(a.results) != len(batch) {
		a.err = fmt.Errorf("store answered %d claims with %d results", len(batch), len(a.results))
	}
	for _, r := range a.results {
		if !r.Answered.IsZero() && (a.answered.IsZero() || r.Answered.Before(a.answered)) {
			a.answered = r.Answered
		}
	}
	l.s.metrics.storeCall(a.err)
	return a
}

// claim acts on the store's answer to one batch, on the loop goroutine.
func (l *loop) claim(ctx context.Context, batch []*entry, a claimAnswer) {
	if a.err != nil {
		if ctx.Err() == nil {
			l.claimFailed(batch, a.err)
		}
		return
	}
	for i, e := range batch {
		l.result(e, a.results[i], a)
	}
}

// claimFailed puts a batch whose claim failed back in the heap, each entry
// a backoff later. A claim whose outcome is unknown may have won: its slots
// are noted, so that one found held by this process later is adopted.
func (l *loop) claimFailed(batch []*entry, err error) {
	l.s.log.Warn("claim failed", "slots", len(batch), "err", err,
		"outcome_unknown", errors.Is(err, slotstore.ErrOutcomeUnknown))
	timedOut := errors.Is(err, context.DeadlineExceeded)
	unknown := errors.Is(err, slotstore.ErrOutcomeUnknown) || timedOut
	for _, e := range batch {
		l.s.metrics.claim(e.p, 0).Inc()
		if unknown {
			l.memo.unknown[slotKey{e.p.name, e.slot.Unix()}] = true
		}
		e.tries++
		if e.kind == fire {
			e.kind = retry
		}
		wait := backoff(e.tries)
		if e.kind == watch && e.tries == 1 && timedOut {
			// A takeover that timed out most likely waited on the slot's
			// row, which a transaction holds until it ends (a job's frozen
			// CompleteTx, at the latest when its lease does): ask again at
			// once, not a backoff later.
			wait = time.Millisecond
		}
		l.push(e, l.s.now().Add(wait))
	}
}

// claimTimeout bounds one claim call: long enough for a big batch, short
// enough that a hung store does not stall the loop past a lease.
func claimTimeout(batch []*entry) time.Duration {
	d := maxStoreWait
	for _, e := range batch {
		d = min(d, e.p.lease/2)
	}
	return d
}

// backoff is the wait before claim attempt tries+1 after a store error.
func backoff(tries int) time.Duration {
	d := 250 * time.Millisecond << min(tries-1, 6)
	return min(d, 10*time.Second)
}
