// The pause cache: the loop's latest read of what the store says is
// paused, the reads it sends ahead of due slots on a goroutine of their own
// (with backoff while they fail), and the gate that keeps new slots of a
// paused job from being claimed.

package engine

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// pauseFresh is how long a read of the pauses is used for new slots,
	// from when it was sent: every replica obeys a pause within a second.
	pauseFresh = 500 * time.Millisecond
	// pauseLead is how long before new slots come due the pauses they need
	// are read, so the read is off their path.
	pauseLead = 50 * time.Millisecond
	// pauseWait is how long new slots wait for a read of the pauses under
	// way before they look again.
	pauseWait = 5 * time.Millisecond
)

// pauseCache is the loop's latest read of the pauses. Only the loop
// goroutine touches it, but for changes, which a pause or resume made
// through this replica counts up so that its next slot reads the pauses
// anew: a read decides slots only if it was sent after the latest change.
//
// Watches (takeovers and retries of slots already claimed) never wait for
// it; new slots do. The loop sends a read pauseLead before new slots come
// due (wanted, readPauses), uses it for pauseFresh, and holds new slots
// back while no usable read is at hand (dropPaused): a pause must not fail
// open, so while reads fail new slots wait, and reads are sent again at
// the pace of backoff.
type pauseCache struct {
	ps      slotstore.Pauses
	sent    time.Time // when the read was sent (monotonic); zero for none
	reading bool      // a read is under way; its answer comes on reads
	// failures counts the reads that failed in a row; none is sent again
	// before retryAt (monotonic), so a failing store is asked at the pace
	// of backoff.
	failures int
	retryAt  time.Time
	// waitingSince is when new entries began to wait for a read (zero for
	// none): a read sent since answers them.
	waitingSince time.Time
	// held are the new entries that wait for the read under way: back in
	// the heap when it answers (notePauses), not looked at every
	// pauseWait meanwhile, which under load, with reads slow to come
	// back, cost the loop a pop and a push of each held entry every time.
	held  []*entry
	reads chan pauseRead
	// changes counts the pauses and resumes made through this replica;
	// seen is its value when the cached read was sent.
	changes atomic.Uint64
	seen    uint64
	// timeout bounds a read, like a claim: half the shortest lease, since
	// every job's new slots wait for it.
	timeout time.Duration
}

// pauseRead is the answer to one read of the pauses.
type pauseRead struct {
	ps   slotstore.Pauses
	sent time.Time
	seen uint64 // changes when it was sent
	err  error
}

// init readies an empty cache for the loop of plans.
func (c *pauseCache) init(plans []*plan) {
	c.reads = make(chan pauseRead, 1)
	c.timeout = maxStoreWait
	for _, p := range plans {
		c.timeout = min(c.timeout, p.lease/2)
	}
}

// fresh reports whether the cached pauses may decide slots due at at: read
// less than pauseFresh before it, and after the latest change made through
// this replica.
func (c *pauseCache) fresh(at time.Time) bool {
	return !c.sent.IsZero() && at.Sub(c.sent) < pauseFresh && c.current()
}

// current reports whether the cached read was sent after every pause or
// resume made through this replica. A read sent since one, but not yet
// answered, does not make it current: until its answer comes, the cache
// still holds what was paused before the change.
func (c *pauseCache) current() bool { return c.seen == c.changes.Load() }

// changed notes a pause or resume made through this replica.
func (c *pauseCache) changed() {
	c.changes.Add(1)
}

// wanted reports whether new slots due at at want a read sent now: none is
// under way, the backoff of failed reads has passed, and the cache would
// not be fresh for them.
func (c *pauseCache) wanted(now, at time.Time) bool {
	return !c.reading && !now.Before(c.retryAt) && !c.fresh(at)
}

// usable reports whether the cache may decide batch's new entries. A read
// the waiting entries asked for answers them whatever its age; a read sent
// ahead answers them while fresh. A slot to skip wants the former: skipping
// is final, so a resume made since must be seen.
func (c *pauseCache) usable(batch []*entry) bool {
	ok := c.fresh(time.Now()) || (!c.waitingSince.IsZero() && !c.sent.Before(c.waitingSince) && c.current())
	return ok && (!c.waitingSince.IsZero() || !slices.ContainsFunc(batch, func(e *entry) bool {
		return e.kind != watch && (c.ps.All || slices.Contains(c.ps.Jobs, e.p.name))
	}))
}

// notePauses takes the answer of a read of the pauses sent ahead.
func (l *loop) notePauses(r pauseRead) {
	c := &l.pauses
	c.reading = false
	switch {
	case r.err != nil:
		c.failures++
		c.retryAt = time.Now().Add(backoff(c.failures))
		if ctx := l.runCtx; ctx.Err() == nil {
			l.s.log.Warn("reading pauses failed; new slots wait", "err", r.err, "try", c.failures)
		}
	case r.sent.After(c.sent): // not older than a read made meanwhile
		c.ps, c.sent, c.seen, c.failures = r.ps, r.sent, r.seen, 0
		l.s.metrics.notePauses(r.ps)
	}
	now := l.s.now()
	for _, e := range c.held {
		l.push(e, now)
	}
	clear(c.held)
	c.held = c.held[:0]
}

// readPauses reads the pauses on a goroutine of its own; the answer comes
// to the loop on l.pauses.reads.
func (l *loop) readPauses(ctx context.Context) {
	c := &l.pauses
	c.reading = true
	seen := c.changes.Load()
	sent := time.Now()
	l.bg.Go(func() {
		pctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		ps, err := l.st.Pauses(pctx)
		l.s.metrics.storeCall(err)
		c.reads <- pauseRead{ps: ps, sent: sent, seen: seen, err: err}
	})
}

// dropPaused removes the entries of paused jobs from a batch before it is
// claimed and records their slots skipped with reason "paused". Watches
// (takeovers of slots already claimed, and retries) go on. The pauses come
// from the loop's latest read when it is fresh (sent less than pauseFresh
// ago), which the loop sends ahead of the slots. Otherwise a read is sent,
// and the new entries wait for its answer, put back a moment later: the
// loop goroutine waits on the store at most pauseWait for them, so a store
// slow to answer holds up no takeover and no run's report. While reads fail, new
// entries wait with backoff: a pause must not fail open.
func (l *loop) dropPaused(ctx context.Context, batch []*entry) []*entry {
	if !slices.ContainsFunc(batch, func(e *entry) bool { return e.kind != watch }) {
		return batch
	}
	c := &l.pauses
	if !c.usable(batch) {
		l.awaitPauses(ctx, batch)
	}
	if !c.usable(batch) {
		return l.holdNew(batch)
	}
	c.waitingSince = time.Time{}
	return l.skipPaused(ctx, batch)
}

// awaitPauses waits a moment (pauseWait), no longer, for a read of the
// pauses that can decide batch's new entries, which found the cache
// unusable: most reads answer at once. It sends one unless one is under
// way or the backoff forbids; an answer that comes but cannot decide them
// (a read sent before they waited, taken only now by a loop that was busy
// for longer than pauseFresh) sends another, so a loop that falls behind
// does not hold every new slot back for a read it took too late.
func (l *loop) awaitPauses(ctx context.Context, batch []*entry) {
	c := &l.pauses
	if c.waitingSince.IsZero() {
		c.waitingSince = time.Now()
	}
	t := time.NewTimer(pauseWait)
	defer t.Stop()
	for !c.usable(batch) {
		if !c.reading {
			if time.Now().Before(c.retryAt) {
				return
			}
			l.readPauses(ctx)
		}
		select {
		case r := <-c.reads:
			l.notePauses(r)
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// holdNew puts batch's new entries back in the heap until a read of the
// pauses can decide them: when the read under way answers, pauseWait later
// when none is, or when the backoff of failed reads ends. It returns the
// watches, which go on.
func (l *loop) holdNew(batch []*entry) []*entry {
	c := &l.pauses
	at := l.s.now().Add(pauseWait)
	if c.failures > 0 {
		at = l.s.now().Add(max(time.Until(c.retryAt), pauseWait))
	}
	kept := batch[:0]
	for _, e := range batch {
		if e.kind == watch {
			kept = append(kept, e)
			continue
		}
		if c.failures > 0 {
			e.tries++ // missed past its window: "store unavailable"
		}
		if e.kind == fire {
			e.kind, e.held = retry, true
		}
		if c.reading && c.failures == 0 {
			c.held = append(c.held, e)
			continue
		}
		l.push(e, at)
	}
	return kept
}

// skipPaused records the slots of batch's new entries whose job is paused
// skipped with reason "paused", and returns the rest of batch. Every
// replica asks; the one whose skip recorded a slot logs it.
func (l *loop) skipPaused(ctx context.Context, batch []*entry) []*entry {
	ps := l.pauses.ps
	if !ps.All && len(ps.Jobs) == 0 {
		return batch
	}
	paused := make(map[string]bool, len(ps.Jobs))
	for _, j := range ps.Jobs {
		paused[j] = true
	}
	kept := batch[:0]
	var skips []slotstore.SkipRequest
	for _, e := range batch {
		if e.kind == watch || (!ps.All && !paused[e.p.name]) {
			kept = append(kept, e)
			continue
		}
		// Logged once the store answers: at INFO by the replica whose skip
		// recorded it, one line in the cluster (skip).
		// Not before its slot by the store's clock: a replica whose clock
		// runs fast must not erase slots a resume may still let run.
		skips = append(skips, slotstore.SkipRequest{Job: e.p.name, Slot: e.slot, Reason: reasonPaused, Retain: e.p.history,
			NotBefore: e.slot, Spec: e.p.spec.Fingerprint})
	}
	l.skip(ctx, skips)
	return kept
}

// holds reports whether job is paused, alone or with the cluster, as the
// latest read said.
func (c *pauseCache) holds(job string) bool {
	return c.ps.All || slices.Contains(c.ps.Jobs, job)
}
