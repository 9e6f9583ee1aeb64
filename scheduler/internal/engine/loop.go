package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

const (
	// maxBatch caps the claims sent in one store call.
	maxBatch = 1000
	// maxSleep caps one wait of the loop, so a step of the wall clock is
	// noticed within it rather than after the whole computed wait.
	maxSleep = time.Second
	// scanEvery is how often the store's running and retrying markers are
	// read, store-wide, to watch slots whose claim this replica never saw.
	scanEvery = time.Minute
	// scanLimit bounds the markers one scan reads in each state.
	scanLimit = 10000
	// pauseFresh is how long a read of the pauses is used for new slots,
	// from when it was sent: every replica obeys a pause within a second.
	pauseFresh = 500 * time.Millisecond
	// pauseLead is how long before new slots come due the pauses they need
	// are read, so the read is off their path.
	pauseLead = 50 * time.Millisecond
	// pauseWait is how long new slots wait for a read of the pauses under
	// way before they look again.
	pauseWait = 5 * time.Millisecond
	// wakeEarly is how long before a due slot the loop's timer fires; the
	// rest is waited out on the processor, which is exact where the timer
	// is not. spinGap keeps that wait to one in every spinGap, so a job set
	// with many distinct instants does not keep a processor busy.
	wakeEarly = 2 * time.Millisecond
	spinGap   = 20 * time.Millisecond
	maxSpin   = 100000
)

// slotKey identifies a slot within the loop.
type slotKey struct {
	job  string
	slot int64
}

// loop is the timer loop. One goroutine, the one calling run, owns the heap
// and every field but mine and active; the store calls it waits for (pauses,
// scans) run on their own goroutines and hand their results back to it.
// Runs it starts are tracked by runs and counted by active.
type loop struct {
	s      *Engine
	st     slotstore.Store
	runCtx context.Context
	runs   *sync.WaitGroup
	active atomic.Int64
	h      entryHeap
	// watched holds the slots with a watch entry in the heap, so a slot
	// found by a scan and by a claim is watched once.
	watched map[slotKey]bool
	// mine holds the slots this replica is running, each with its run's
	// cancel function; run goroutines remove theirs when they end.
	mine struct {
		sync.Mutex
		m map[slotKey]context.CancelCauseFunc
		// lost holds each run of this process that ended with its lease
		// lost and its outcome not recorded, for a lease after: its
		// marker, which the store may hold for this process that long, is
		// never adopted as a claim whose reply was lost (its job has run
		// already). Later no store answers "held" with its fence.
		lost map[slotKey]lostRun
	}
	// hooks are the run hooks of every run the loop starts.
	hooks runHooks
	// watches carries to the loop goroutine the slots runs ask it to
	// watch: a retry a failed run scheduled, a slot whose lease a run lost.
	watches chan watchNote
	// scans carries to the loop goroutine the running and retrying markers
	// the scanner read.
	scans chan []slotstore.Marker
	// pauses is the latest read of what is paused; pauseTimeout bounds a
	// read, like a claim.
	pauses       pauseCache
	pauseTimeout time.Duration
	// bg tracks the loop's own goroutines (scanner, reads of the pauses):
	// run returns when they have, so none calls the store after Run.
	bg sync.WaitGroup
	// spunAt is when the loop last waited out a wake on the processor.
	spunAt time.Time
	// unknown holds the slots whose last claim's outcome is unknown: if
	// such a slot turns out held by this replica, the claim won and its
	// reply was lost, and the run is adopted.
	unknown map[slotKey]bool
	// dataLoss holds the jobs whose slots the store skipped for data loss
	// since the last one it did not: the loss is logged once.
	dataLoss map[string]bool
	// newJobs holds the jobs whose generation this replica's start-up
	// began: their skipped catch-up is logged as such, not as a loss.
	newJobs map[string]bool
	// clockAt and realAt are the scheduler's clock and the process's
	// monotonic clock when the loop last looked, to notice the former
	// being set.
	clockAt, realAt time.Time
}

// pauseCache is the loop's latest read of the pauses. Only the loop
// goroutine touches it, but for stale, which a pause or resume made through
// this replica sets so the next slot reads the pauses anew.
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
	reads        chan pauseRead
	stale        atomic.Bool
}

// pauseRead is the answer to one read of the pauses.
type pauseRead struct {
	ps   slotstore.Pauses
	sent time.Time
	err  error
}

// fresh reports whether the cached pauses may decide slots due at at: read
// less than pauseFresh before it, and not made stale since.
func (c *pauseCache) fresh(at time.Time) bool {
	return !c.sent.IsZero() && at.Sub(c.sent) < pauseFresh && !c.stale.Load()
}

// watchNote asks the loop to watch a slot from at: a failed slot whose
// retry is due then (retry set), or a slot whose lease this replica lost,
// so it takes the slot over should its successor die too.
type watchNote struct {
	p        *plan
	slot, at time.Time
	retry    bool
}

func newLoop(s *Engine, st slotstore.Store, runCtx context.Context, runs *sync.WaitGroup) *loop {
	l := &loop{s: s, st: st, runCtx: runCtx, runs: runs, watched: make(map[slotKey]bool), watches: make(chan watchNote, 64),
		scans: make(chan []slotstore.Marker), pauses: pauseCache{reads: make(chan pauseRead, 1)},
		unknown: make(map[slotKey]bool), dataLoss: make(map[string]bool),
		newJobs: make(map[string]bool)}
	l.mine.m = make(map[slotKey]context.CancelCauseFunc)
	l.mine.lost = make(map[slotKey]lostRun)
	l.hooks = runHooks{retryAt: l.noteRetry}
	l.pauseTimeout = maxStoreWait
	for _, p := range s.plans {
		l.pauseTimeout = min(l.pauseTimeout, p.lease/2)
	}
	return l
}

func (l *loop) runningNow() int64 { return l.active.Load() }

// run schedules every job and serves the heap until ctx ends.
func (l *loop) run(ctx context.Context) {
	newest, ok := l.enroll(ctx)
	if !ok {
		return
	}
	now := l.s.now()
	var skips []slotstore.SkipRequest
	for i, p := range l.s.plans {
		if i%1024 == 0 && ctx.Err() != nil {
			return
		}
		// Sent as they fill a batch: after a long outage every job may
		// have up to maxMissedRecords of them.
		if skips = append(skips, l.schedule(p, now, newest[p.name])...); len(skips) >= maxBatch {
			l.skip(ctx, skips)
			skips = skips[:0]
		}
	}
	newest = nil
	l.skip(ctx, skips)

	defer l.bg.Wait()
	l.bg.Go(func() { l.scanner(ctx) })
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		l.followClock()
		wait, spin := l.sleep(ctx)
		if spin {
			// Bounded in steps too: where time stands still while anything
			// runs (a test's fake clock), the timer takes over.
			l.spunAt = time.Now()
			deadline := time.Now().Add(wait)
			for i := 0; i < maxSpin && time.Now().Before(deadline); i++ {
				runtime.Gosched()
			}
			wait = time.Until(deadline)
		}
		if wait <= 0 {
			// Behind: serve what waits on the channels first, so runs and
			// the scanner are never held up by a backlog of due slots.
			for l.receive(nil, nil) {
			}
			l.wake(ctx)
			continue
		}
		timer.Reset(wait)
		l.receive(ctx.Done(), timer.C)
	}
}

// minStep is the least jump of the scheduler's clock against the process's
// monotonic clock that the loop treats as the clock being set.
const minStep = time.Second

// followClock notices the scheduler's clock being set (by hand, or by NTP
// after a suspend), against the process's monotonic clock, and moves with
// it the entries that wait a span from when they were made: watches until a
// lease ends, claims until the store's clock reaches a slot, retries and
// lapses. Fire entries stay: a slot is due at its nominal time on the clock
// as it now reads. A clock set back thus idles through slots it passed
// already (another replica ran them, or, if this clock ran ahead, the store
// answered them "not due yet" and their claims wait, moved, for their time);
// a clock set forward finds the slots it jumped over late, and the store's
// clock judges them (guarantee 7).
func (l *loop) followClock() {
	now, real := l.s.now(), time.Now()
	prevNow, prevReal := l.clockAt, l.realAt
	l.clockAt, l.realAt = now, real
	if prevNow.IsZero() {
		return
	}
	step := now.Round(0).Sub(prevNow.Round(0)) - real.Sub(prevReal)
	if step.Abs() < minStep {
		return
	}
	l.s.log.Warn("clock set; moving the entries that wait a span", "step", step.Round(time.Millisecond))
	for _, e := range l.h {
		if e.kind != fire {
			e.at = e.at.Add(step)
		}
	}
	heap.Init(&l.h)
}

// receive acts on one message to the loop (a watch a run asks for, a scan,
// a read of the pauses) and reports whether there was one. With a nil stop
// it takes only a message already waiting; otherwise it waits for one, for
// stop to be closed or for tick.
func (l *loop) receive(stop <-chan struct{}, tick <-chan time.Time) bool {
	select {
	case n := <-l.watches:
		l.noteWatch(n)
		return true
	case ms := <-l.scans:
		l.watchAll(ms)
		return true
	case r := <-l.pauses.reads:
		l.notePauses(r)
		return true
	default:
		if stop == nil {
			return false
		}
	}
	select {
	case <-stop:
	case <-tick:
	case n := <-l.watches:
		l.noteWatch(n)
	case ms := <-l.scans:
		l.watchAll(ms)
	case r := <-l.pauses.reads:
		l.notePauses(r)
	}
	return true
}

// noteWatch watches a slot a run asks the loop to: from the moment its
// retry is due, like any slot another replica may take; a takeover has no
// window.
func (l *loop) noteWatch(n watchNote) {
	e := &entry{p: n.p, slot: n.slot, kind: watch}
	if n.retry {
		e.until = n.p.retryUntil(n.slot)
	}
	l.push(e, n.at)
}

// notePauses takes the answer of a read of the pauses sent ahead.
func (l *loop) notePauses(r pauseRead) {
	l.pauses.reading = false
	switch {
	case r.err != nil:
		l.pauses.failures++
		l.pauses.retryAt = time.Now().Add(backoff(l.pauses.failures))
		if ctx := l.runCtx; ctx.Err() == nil {
			l.s.log.Warn("reading pauses failed; new slots wait", "err", r.err, "try", l.pauses.failures)
		}
	case r.sent.After(l.pauses.sent): // not older than a read made meanwhile
		l.pauses.ps, l.pauses.sent, l.pauses.failures = r.ps, r.sent, 0
		l.s.metrics.notePauses(r.ps)
	}
}

// sleep says how long the loop may wait before its next wake, and whether
// to wait that out on the processor rather than on the timer. It sends the
// read of the pauses that the next new slots need, pauseLead before they
// are due.
func (l *loop) sleep(ctx context.Context) (time.Duration, bool) {
	if len(l.h) == 0 {
		return maxSleep, false
	}
	top := l.h.peek()
	wait := top.at.Sub(l.s.now())
	if top.kind == fire || top.kind == retry {
		if !l.pauses.reading && !time.Now().Before(l.pauses.retryAt) && !l.pauses.fresh(time.Now().Add(max(wait, 0))) {
			if wait <= pauseLead {
				l.readPauses(ctx)
			} else {
				return min(wait-pauseLead, maxSleep), false
			}
		}
		if wait > 0 && wait <= wakeEarly && time.Since(l.spunAt) > spinGap {
			return wait, true
		}
	}
	if wait <= 0 {
		return 0, false
	}
	if wait > wakeEarly && (top.kind == fire || top.kind == retry) {
		wait -= wakeEarly
	}
	return min(wait, maxSleep), false
}

// readPauses reads the pauses on a goroutine of its own; the answer comes
// to the loop on l.pauses.reads.
func (l *loop) readPauses(ctx context.Context) {
	l.pauses.reading = true
	l.pauses.stale.Store(false)
	sent := time.Now()
	l.bg.Go(func() {
		pctx, cancel := context.WithTimeout(ctx, l.pauseTimeout)
		defer cancel()
		ps, err := l.st.Pauses(pctx)
		l.s.metrics.storeCall(err)
		l.pauses.reads <- pauseRead{ps: ps, sent: sent, err: err}
	})
}

// scanner reads the store's running and retrying markers, store-wide, at
// once and then every scanEvery, and hands them to the loop goroutine, so a
// slot whose holder died is taken over even if this replica never saw it
// claimed: it started after the claim, or the replicas that watched it
// restarted. Two reads per interval, whatever the number of jobs.
func (l *loop) scanner(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(scanEvery)
		var ms []slotstore.Marker
		for _, state := range []slotstore.State{slotstore.StateRunning, slotstore.StateRetrying} {
			found, err := l.scanState(ctx, state)
			if err != nil {
				if ctx.Err() == nil {
					l.s.log.Warn("reading running slots failed", "state", state, "err", err)
				}
				ms = nil
				break
			}
			ms = append(ms, found...)
		}
		if len(ms) == 0 {
			continue
		}
		select {
		case l.scans <- ms:
		case <-ctx.Done():
			return
		}
	}
}

// scanState reads every marker in state, store-wide, in pages of
// scanLimit, newest slot first: the oldest, whose holders are likeliest to
// be dead, are read too, however many there are.
func (l *loop) scanState(ctx context.Context, state slotstore.State) ([]slotstore.Marker, error) {
	var out []slotstore.Marker
	var before time.Time
	for {
		sctx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
		page, err := l.st.History(sctx, slotstore.HistoryParams{State: state, Limit: scanLimit, Before: before})
		cancel()
		l.s.metrics.storeCall(err)
		if err != nil {
			return nil, err
		}
		if len(page) > 0 && !before.IsZero() && !page[0].Slot.Before(before) {
			// A store that does not page (a Store of the caller's own
			// that ignores Before): what it gave is what there is.
			return out, nil
		}
		out = append(out, page...)
		if len(page) < scanLimit {
			return out, nil
		}
		oldest := page[len(page)-1].Slot
		if oldest.Equal(page[0].Slot) {
			// A whole page of one second: the rest of that second is
			// passed over this time (another replica's scan, or the next,
			// may read it in another order).
			l.s.log.Warn("more slots of one second in a state than a scan reads", "state", state,
				"slot", oldest.UTC().Format(time.RFC3339), "read", scanLimit)
			before = oldest
			continue
		}
		// The next page begins at the oldest slot again: some of its
		// markers may lie beyond this page. Those read twice are watched
		// once.
		before = oldest.Add(time.Second)
	}
}

// watchAll watches every scanned marker of this replica's jobs that it does
// not run itself.
func (l *loop) watchAll(ms []slotstore.Marker) {
	now := l.s.now()
	for _, m := range ms {
		p := l.s.byName[m.Job]
		if p == nil {
			continue // another replica's job, or a duty's term
		}
		if _, ok := l.running(slotKey{p.name, m.Slot.Unix()}); ok {
			continue
		}
		if m.State == slotstore.StateRetrying {
			// A retry is bound by its window; a stale one is left alone.
			if until := p.retryUntil(m.Slot); now.Before(until) {
				l.push(&entry{p: p, slot: m.Slot, kind: watch, until: until}, now)
			}
			continue
		}
		l.push(&entry{p: p, slot: m.Slot, kind: watch}, now)
	}
}

// wake pops every due entry and claims the slots still worth claiming in
// batches.
func (l *loop) wake(ctx context.Context) {
	now := l.s.now()
	var batch []*entry
	var missed []slotstore.SkipRequest
	for len(l.h) > 0 && !l.h.peek().at.After(now) {
		e := l.h.pop()
		switch e.kind {
		case watch:
			delete(l.watched, slotKey{e.p.name, e.slot.Unix()})
			if !e.until.IsZero() && now.After(e.until) {
				l.s.log.Warn("retry dropped: its window closed", "job", e.p.name, "slot", e.slot.Format(time.RFC3339), "until", e.until.Format(time.RFC3339))
				l.s.metrics.missed.WithLabelValues(e.p.name, "retry window closed").Inc()
				continue
			}
		case lapse:
			missed = append(missed, e.p.missedSkip(e.slot, e.reason))
			continue
		}
		if e.kind == fire {
			if next := e.p.sched.Next(e.slot); !next.IsZero() {
				l.h.push(&entry{at: next.Add(e.p.jitter), p: e.p, slot: next, kind: fire})
				l.s.metrics.next(e.p).Set(seconds(next))
			}
			l.s.metrics.timerLag.Observe(now.Sub(e.at).Seconds())
			if lag := now.Sub(e.at); lag > time.Second {
				l.s.log.Debug("timer lag", "job", e.p.name, "lag", lag)
			}
		}
		if e.kind != watch && e.late(now) {
			skipReason := reasonLate
			if e.tries > 0 {
				skipReason = reasonUnavailable
			}
			// Logged and counted by the replica whose skip records it (skip).
			missed = append(missed, e.p.missedSkip(e.slot, skipReason))
			continue
		}
		batch = append(batch, e)
	}
	batch = l.dropPaused(ctx, batch)
	l.skip(ctx, missed)
	l.claimAll(ctx, batch)
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

// maxSolo bounds the takeovers whose last claim failed that a wake sends
// each in a call of its own; the rest go together.
const maxSolo = 8

// claimAnswer is the store's answer to one batch of claims.
type claimAnswer struct {
	results []slotstore.ClaimResult
	err     error
	sent    time.Time
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
			TakeoverOnly: e.kind == watch,
			// Not before the slot by the store's clock, however far ahead
			// this replica's clock runs (guarantee 3 after a loss).
			NotBefore: e.slot,
		}
	}
	a := claimAnswer{sent: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, claimTimeout(batch))
	a.results, a.err = l.st.Claim(cctx, slotstore.ClaimParams{Replica: l.s.replica, Incarnation: l.s.incarnation, Requests: reqs})
	cancel()
	if a.err == nil && len(a.results) != len(batch) {
		a.err = fmt.Errorf("store answered %d claims with %d results", len(batch), len(a.results))
	}
	l.s.metrics.storeCall(a.err)
	return a
}

// claim acts on the store's answer to one batch, on the loop goroutine.
func (l *loop) claim(ctx context.Context, batch []*entry, a claimAnswer) {
	results, err, sent := a.results, a.err, a.sent
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		l.s.log.Warn("claim failed", "slots", len(batch), "err", err,
			"outcome_unknown", errors.Is(err, slotstore.ErrOutcomeUnknown))
		timedOut := errors.Is(err, context.DeadlineExceeded)
		unknown := errors.Is(err, slotstore.ErrOutcomeUnknown) || timedOut
		for _, e := range batch {
			l.s.metrics.claim(e.p, 0).Inc()
			if unknown {
				l.unknown[slotKey{e.p.name, e.slot.Unix()}] = true
			}
			e.tries++
			if e.kind == fire {
				e.kind = retry
			}
			wait := backoff(e.tries)
			if e.kind == watch && e.tries == 1 && timedOut {
				// A takeover that timed out most likely waited on the
				// slot's row, which a transaction holds until it ends (a
				// job's frozen CompleteTx, at the latest when its lease
				// does): ask again at once, not a backoff later.
				wait = time.Millisecond
			}
			l.push(e, l.s.now().Add(wait))
		}
		return
	}
	for i, e := range batch {
		l.result(e, results[i], sent)
	}
}

func (l *loop) result(e *entry, r slotstore.ClaimResult, sent time.Time) {
	l.s.metrics.claim(e.p, r.Status).Inc()
	k := slotKey{e.p.name, e.slot.Unix()}
	wasUnknown := l.unknown[k]
	delete(l.unknown, k)
	if r.Status == slotstore.Held && wasUnknown && l.mineByName(r.Marker) && l.adopt(e.p, r.Marker) {
		return
	}
	// A slot's attributes, built only for a line that is written: most
	// decisions are not worth one at the levels replicas run at.
	attrs := func(more ...any) []any {
		return append([]any{"job", e.p.name, "slot", e.slot.Format(time.RFC3339)}, more...)
	}
	logAt := func(level slog.Level, msg string, more ...any) {
		if l.s.log.Enabled(context.Background(), level) {
			l.s.log.Log(context.Background(), level, msg, attrs(more...)...)
		}
	}
	// A slot's first decision is worth a line; re-checks of a watched slot
	// are not.
	level := slog.LevelInfo
	if e.kind == watch {
		level = slog.LevelDebug
	}
	switch r.Status {
	case slotstore.Won:
		delete(l.dataLoss, e.p.name)
		delete(l.newJobs, e.p.name)
		for _, ref := range r.Replaced {
			l.s.log.Info("run replaced", "job", ref.Job, "slot", ref.Slot.UTC().Format(time.RFC3339), "fence", ref.Fence,
				"by", e.slot.Format(time.RFC3339))
			if cancel, ok := l.running(slotKey{ref.Job, ref.Slot.Unix()}); ok {
				cancel(ErrReplaced) // ours: stop it now, not at its next renewal
			}
		}
		l.start(e.p, r.Claim, sent)
	case slotstore.Held:
		logAt(level, "slot lost", "holder", r.Marker.Holder, "fence", r.Marker.Fence, "attempt", r.Marker.Attempt,
			"remaining", r.Remaining.Round(time.Millisecond))
		// Claim again exactly when the holder's lease ends, by the store's
		// reckoning, so a dead holder's slot is taken over at once; and at
		// least every renewal interval, so a slot released by a holder that
		// shut down is taken over within one interval.
		wait := max(min(r.Remaining-time.Since(sent), e.p.lease/3), time.Millisecond)
		l.push(&entry{p: e.p, slot: e.slot, kind: watch}, l.s.now().Add(wait))
	case slotstore.Finished:
		logAt(level, "slot lost", "holder", r.Marker.Holder, "fence", r.Marker.Fence, "state", r.Marker.State,
			"outcome", r.Marker.Outcome)
	case slotstore.Waiting:
		logAt(level, "slot waiting for its retry", "due_in", r.Remaining.Round(time.Millisecond))
		l.push(&entry{p: e.p, slot: e.slot, kind: watch, until: e.p.retryUntil(e.slot)},
			l.s.now().Add(max(r.Remaining-time.Since(sent), time.Millisecond)))
	case slotstore.Skipped:
		if r.Marker.Reason == slotstore.ReasonDataLoss && r.Marker.Holder == l.s.replica && l.newJobs[e.p.name] {
			logAt(slog.LevelInfo, "slot not caught up: the store has just begun to record the job")
			break
		}
		if r.Marker.Reason == slotstore.ReasonDataLoss && r.Marker.Holder == l.s.replica {
			l.s.metrics.missed.WithLabelValues(e.p.name, "data loss").Inc()
			if !l.dataLoss[e.p.name] {
				l.dataLoss[e.p.name] = true
				logAt(slog.LevelWarn, "slot skipped: older than the store's record of the job",
					"reason", r.Marker.Reason, "why", "the store lost its data, or has just begun to record the job")
				break
			}
		}
		logAt(level, "slot skipped", "reason", r.Marker.Reason, "by", r.Marker.Holder)
		if r.Marker.Holder == l.s.replica && r.Marker.Reason == slotstore.ReasonOverlap {
			l.s.metrics.missed.WithLabelValues(e.p.name, slotstore.ReasonOverlap).Inc()
		}
	case slotstore.NotYet:
		// This replica's clock runs ahead of the store's: the store hands
		// out a slot only once its own clock says it is due.
		logAt(slog.LevelDebug, "slot not due yet by the store's clock", "remaining", r.Remaining.Round(time.Millisecond))
		if e.kind == fire {
			e.kind = retry // the next slot is scheduled already
		}
		// Its window opens when the store's clock reaches the slot, and
		// closes starting_deadline later, whatever this replica's clock
		// says then: one that runs ahead by more than the deadline still
		// takes its share of the slots. Measured from when the claim was
		// sent, it closes no later than it does by the store's clock.
		if e.closes.IsZero() {
			e.closes = sent.Add(r.Remaining + e.p.deadline)
		}
		l.push(e, l.s.now().Add(max(r.Remaining-time.Since(sent), time.Millisecond)))
	case slotstore.Absent:
		logAt(slog.LevelDebug, "slot gone", "reason", "its marker no longer exists")
	case slotstore.Abandoned:
		logAt(slog.LevelWarn, "slot abandoned", "holder", r.Marker.Holder, "attempt", r.Marker.Attempt,
			"on_crash", e.p.onCrash)
	}
}

// mineByName reports whether m's claim was made by this process: this
// replica's name and this process's incarnation. Another process started
// with the same name (a copied configuration) has another incarnation.
func (l *loop) mineByName(m slotstore.Marker) bool {
	return m.Holder == l.s.replica && m.Incarnation == l.s.incarnation
}

// enroll enrolls every job in the store before the first claim, so that
// the store knows how far back its record of each job goes (Generation), and
// returns the slot of each job's newest marker, read in the same batches. It
// retries until the store answers or ctx ends, and reports which.
func (l *loop) enroll(ctx context.Context) (map[string]time.Time, bool) {
	names := make([]string, len(l.s.plans))
	for i, p := range l.s.plans {
		names[i] = p.name
	}
	newest := make(map[string]time.Time)
	for tries := 1; ; tries++ {
		for len(names) > 0 {
			n := min(len(names), maxBatch)
			ectx, cancel := context.WithTimeout(ctx, claimTimeout(nil))
			sent := l.s.now()
			gens, err := l.st.Enroll(ectx, slotstore.EnrollParams{Jobs: names[:n]})
			cancel()
			for _, g := range gens {
				// Begun by this enrolment (give or take the clocks): the
				// store has just started to record the job, so slots before
				// it were never run here; skipping them is no news.
				if g.Born.After(sent.Add(-time.Second)) {
					l.newJobs[g.Job] = true
				}
				if !g.Newest.IsZero() {
					newest[g.Job] = g.Newest
				}
			}
			l.s.metrics.storeCall(err)
			if err != nil {
				if ctx.Err() != nil {
					return nil, false
				}
				l.s.log.Warn("enrolling the jobs failed; retrying", "err", err, "try", tries)
				break
			}
			names = names[n:]
		}
		if len(names) == 0 {
			return newest, true
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(backoff(tries)):
		}
	}
}

// adopt takes up a claim this replica made whose reply was lost: it renews
// the lease under the marker's fence (so the store's lease covers the trust
// window that starts now) and runs the slot as if the claim had answered.
// The marker's incarnation says the claim is this process's own, even when
// another live process shares the replica name.
func (l *loop) adopt(p *plan, m slotstore.Marker) bool {
	k := slotKey{p.name, m.Slot.Unix()}
	l.mine.Lock()
	_, running := l.mine.m[k]
	lr, ran := l.mine.lost[k]
	l.mine.Unlock()
	ran = ran && lr.fence == m.Fence
	if running || ran {
		return false
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(l.runCtx, claimTimeout(nil))
	err := l.st.Renew(ctx, slotstore.RenewParams{Ref: m.Ref(), Lease: p.lease})
	cancel()
	if err != nil {
		l.s.log.Warn("could not adopt a claim whose reply was lost", "job", p.name, "slot", m.Slot.Format(time.RFC3339),
			"fence", m.Fence, "err", err)
		return false
	}
	l.s.log.Info("claim adopted", "job", p.name, "slot", m.Slot.Format(time.RFC3339), "fence", m.Fence, "reason", "its reply was lost")
	l.start(p, slotstore.Claim{Ref: m.Ref(), Attempt: m.Attempt, PrevHolder: ""}, sent)
	return true
}

// lostRun is a run that ended with its lease lost: its claim's fence, and
// until when the store may still hold the claim.
type lostRun struct {
	fence int64
	until time.Time
}

// start runs a won claim in its own goroutine, which the loop can cancel.
func (l *loop) start(p *plan, c slotstore.Claim, sent time.Time) { l.startWith(p, c, sent, nil) }

// startWith starts the run of a won claim, as start does, and sends how it
// ended on done, if done is not nil (a buffered channel: the run never
// waits for the receiver).
func (l *loop) startWith(p *plan, c slotstore.Claim, sent time.Time, done chan<- End) {
	l.active.Add(1)
	k := slotKey{p.name, c.Slot.Unix()}
	ctx, cancel := context.WithCancelCause(l.runCtx)
	l.mine.Lock()
	l.mine.m[k] = cancel
	l.mine.Unlock()
	l.runs.Add(1)
	go l.runOne(ctx, cancel, k, p, c, sent, done) // one allocation, where WaitGroup.Go and a closure take two
}

// runOne runs a claim started by startWith to its end, on its own goroutine.
func (l *loop) runOne(ctx context.Context, cancel context.CancelCauseFunc, k slotKey, p *plan, c slotstore.Claim,
	sent time.Time, done chan<- End) {
	defer l.runs.Done()
	defer l.active.Add(-1)
	end := l.s.execute(ctx, cancel, l.st, p, c, sent, l.hooks)
	l.mine.Lock()
	delete(l.mine.m, k)
	if end == EndLeaseLost {
		now := time.Now()
		for lk, lr := range l.mine.lost { // few: a lease lost is rare
			if now.After(lr.until) {
				delete(l.mine.lost, lk)
			}
		}
		l.mine.lost[k] = lostRun{fence: c.Fence, until: now.Add(p.lease)}
	}
	l.mine.Unlock()
	if done != nil {
		done <- end
	}
	if end != EndLeaseLost {
		return
	}
	// The successor may die too, and the replicas that watched the slot may
	// be gone or busy elsewhere: watch it like any claimed slot. A full
	// channel drops the note; the next scan finds the slot.
	select {
	case l.watches <- watchNote{p: p, slot: c.Slot, at: l.s.now()}:
	default:
	}
}

// running returns the cancel function of the run of k, if this replica
// runs it.
func (l *loop) running(k slotKey) (context.CancelCauseFunc, bool) {
	l.mine.Lock()
	defer l.mine.Unlock()
	cancel, ok := l.mine.m[k]
	return cancel, ok
}

// noteRetry asks the loop to watch slot of p from at, when its retry is due.
func (l *loop) noteRetry(p *plan, slot, at time.Time) {
	select {
	case l.watches <- watchNote{p: p, slot: slot, at: at, retry: true}:
	case <-l.runCtx.Done():
	}
}

// push schedules e at at; a watch of a slot already watched is dropped.
func (l *loop) push(e *entry, at time.Time) {
	e.at = at
	if e.kind == watch {
		k := slotKey{e.p.name, e.slot.Unix()}
		if l.watched[k] {
			return
		}
		l.watched[k] = true
	}
	l.h.push(e)
}

// backoff is the wait before claim attempt tries+1 after a store error.
func backoff(tries int) time.Duration {
	d := 250 * time.Millisecond << min(tries-1, 6)
	return min(d, 10*time.Second)
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

// maxStoreWait bounds any one store call of the loop; a call for slots of
// a job waits at most half its lease (claimTimeout), and a read of the
// pauses, which every job's new slots wait for, half the shortest lease.
const maxStoreWait = 5 * time.Second
