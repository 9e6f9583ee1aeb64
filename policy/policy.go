package policy

// OnCrash says what happens to a slot whose holder stopped renewing its
// lease (it crashed, hung or lost the store) before it recorded an outcome,
// once that lease has expired by the store's clock.
type OnCrash string

const (
	// OnCrashRetry: the next claim of the slot takes it over and runs it
	// again, with attempt+1 and a new fence, until the job's MaxAttempts
	// are spent; then the slot is abandoned (reason "max attempts"). The
	// default.
	OnCrashRetry OnCrash = "retry"
	// OnCrashSkip: the next claim of the slot marks it abandoned (reason
	// "on_crash skip"); nobody runs it again.
	OnCrashSkip OnCrash = "skip"
)

// Valid reports whether c is OnCrashRetry or OnCrashSkip.
func (c OnCrash) Valid() bool { return c == OnCrashRetry || c == OnCrashSkip }

// Overlap says what a slot that comes due does while an earlier slot of the
// same job is still running, on any replica. It is judged only when a claim
// would create the slot's first marker: the takeover of a crashed run, the
// claim of a released slot and a retry are never checked.
type Overlap string

const (
	// OverlapAllow runs the new slot whatever else runs. The default.
	OverlapAllow Overlap = "allow"
	// OverlapForbid records the new slot skipped (reason "overlap"; no
	// fence is issued, and the slot never runs) while another slot of the
	// job is running under a live lease, including one won earlier in the
	// same batch of claims. A slot whose holder's lease has expired does
	// not count.
	OverlapForbid Overlap = "forbid"
	// OverlapReplace runs the new slot and makes every other running slot
	// of the job, live lease or expired, replaced (reason "replaced by "
	// and the new slot's time): its lease ends and its fence stays, so its
	// holder's renewal, finish and release fail as a lost lease, and the
	// engine cancels that run.
	OverlapReplace Overlap = "replace"
	// OverlapQueue makes the new slot wait while another slot of the job
	// runs under a live lease: its claim records nothing, and the slot is
	// claimed again when that run ends, within its starting deadline
	// measured from the slot. One slot waits at most: when the job's next
	// slot comes due, the one still waiting is recorded skipped (reason
	// "overlap"), and the new one waits in its place. A slot whose holder's
	// lease has expired still counts while a takeover may win it (OnCrash
	// retry, attempts left, and claimed since the job's generation began):
	// the new slot waits until that slot is taken over and its run ends,
	// or it is abandoned, so it never starts beside the takeover. One no
	// takeover may win does not count. Backfills and manual triggers treat
	// it as OverlapForbid.
	OverlapQueue Overlap = "queue"
)

// Valid reports whether o is OverlapAllow, OverlapForbid, OverlapReplace or
// OverlapQueue.
func (o Overlap) Valid() bool {
	return o == OverlapAllow || o == OverlapForbid || o == OverlapReplace || o == OverlapQueue
}

// CatchUp says which slots a replica that starts tries among those that
// came due within the last starting deadline while it was not running.
// Slots older than that can no longer start. Those it leaves are left to
// the replicas that are up; one that nobody claims before its starting
// window closes is recorded skipped with reason "catch_up" and the policy
// ("catch_up none"), so history shows it.
type CatchUp string

const (
	// CatchUpNone tries none of them, only a slot due in the very second
	// the replica starts.
	CatchUpNone CatchUp = "none"
	// CatchUpLatest tries the newest of them. The default.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll tries the newest of them, up to the job's catch-up limit
	// (catch_up_limit).
	CatchUpAll CatchUp = "all"
)

// Valid reports whether c is CatchUpNone, CatchUpLatest or CatchUpAll.
func (c CatchUp) Valid() bool { return c == CatchUpNone || c == CatchUpLatest || c == CatchUpAll }

// Gap says what a fixed-time schedule (its hour field is numbers) does with
// a wall time that a spring-forward jump of its zone's clock skips.
// Elapsed-time schedules follow real time and have no choice to make.
type Gap string

const (
	// GapShift runs the slot when the gap ends, at the first instant the
	// clock reads the wall time or later: once that day, late. The default.
	GapShift Gap = "shift"
	// GapSkip takes no slot that day for a wall time the clock never shows.
	GapSkip Gap = "skip"
)

// Valid reports whether g is GapShift or GapSkip.
func (g Gap) Valid() bool { return g == GapShift || g == GapSkip }

// Repeat says what a fixed-time schedule does with a wall time that a fall
// back of its zone's clock shows twice.
type Repeat string

const (
	// RepeatFirst runs the slot at the wall time's first occurrence only.
	// The default.
	RepeatFirst Repeat = "first"
	// RepeatBoth runs a slot at each of its two occurrences.
	RepeatBoth Repeat = "both"
)

// Valid reports whether r is RepeatFirst or RepeatBoth.
func (r Repeat) Valid() bool { return r == RepeatFirst || r == RepeatBoth }

// AfterDataLoss says what becomes of a slot whose marker a store may have
// lost with its data (a Redis restarted empty, a database restored): a
// slot older than the store's new record of its job, or one that was
// running when its marker went.
type AfterDataLoss string

const (
	// AfterDataLossSkip records such a slot skipped (reason "data loss"):
	// it may have run before the loss, and a finished slot must never run
	// again. The default.
	AfterDataLossSkip AfterDataLoss = "skip"
	// AfterDataLossRun runs it, attempt 1 under a new fence, as a new slot:
	// for a job whose effect is once per slot whoever runs it and however
	// often — written through a fence helper that records the slot
	// (fence.OncePG), in the job's own CompleteTx, or idempotent on the
	// run's key — whose record refuses the repeat if the slot ran before.
	AfterDataLossRun AfterDataLoss = "run"
)

// Valid reports whether a is AfterDataLossSkip or AfterDataLossRun.
func (a AfterDataLoss) Valid() bool { return a == AfterDataLossSkip || a == AfterDataLossRun }
