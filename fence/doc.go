// Package fence makes a resource reject a stale holder, and apply a slot's
// effect once.
//
// A lease cannot stop a holder that has outlived it: a process paused by a
// garbage collector, a stalled VM or a SIGSTOP wakes up still believing it
// holds its slot or its leadership, and writes. Every claim and every term
// of slotcron comes with a fence, a number greater than every fence issued
// before for the same job or duty. If the resource remembers the highest
// fence it has accepted and refuses a lower one, the stale write fails,
// however late it arrives:
//
//	A claims, fence 17 ──▶ A pauses ……………………………………… A wakes, writes with 17 ──▶ rejected (17 < 18)
//	                       lease ends; B claims, fence 18, writes with 18 ──▶ accepted, highest = 18
//
// A fence does nothing against a repeat. A holder that commits its effect
// and then dies (or freezes, or loses the store) before the slot is
// recorded finished is taken over when its lease ends, and its successor
// runs the job again with a higher fence, which a fence check accepts. The
// once helpers record the run key (job@slot) with its fence in the same
// atomic step as the effect, and refuse the slot's effect a second time:
//
//	A claims, fence 17, commits its effect, dies ✝ ……… lease ends; B claims, fence 18, attempt 2
//	                                                   B writes with 18 ──▶ refused: ErrApplied (by fence 17)
//
// # Helpers
//
// Which helper refuses what, and when:
//
//	helper                         refuses a stale holder once a         refuses a repeat after
//	                               newer fence has been written to        commit-then-crash
//	PG.Check, CheckPG              the resource (any slot of the job)     no
//	Redis.Set, Memory.Set          the key (any slot of the job)          no
//	PG.Once, OncePG                the slot's effect (that slot)          yes
//	Redis.SetOnce, Memory.SetOnce  the key (any slot of the job)          yes
//
// In detail:
//
//   - PG.Check (and CheckPG) checks a fence inside the caller's PostgreSQL
//     transaction: one statement records the highest fence per resource
//     name (INSERT … ON CONFLICT … DO UPDATE … WHERE highest <= fence) and
//     raises an error for a lower one, which aborts the transaction, so the
//     caller's writes and the check commit or roll back together. PG.Ensure
//     creates its tables and functions.
//   - PG.Once (and OncePG) records run.Key() with run.Fence inside the
//     caller's transaction, in a table whose primary key is the run key,
//     and raises an error when the slot's effect was already committed, so
//     the effect commits once per slot whoever runs it and however often.
//     Records are kept for PG.Retain (DefaultRetain, 7 days, by default)
//     and pruned after, as Once goes or by PG.Prune.
//   - Redis.Set stores a value only if its fence is at least the highest
//     the key has seen, in one Lua script; Redis.Get reads it back.
//     Redis.SetOnce does the same and, in the same script, records that the
//     slot wrote the key, refusing a second write of it for that slot. The
//     record expires after Redis.Retain.
//   - Memory does all of it in one process's memory, for tests and
//     single-process use. It fences nothing shared between processes.
//
// A fence helper refusing a stale holder returns an error wrapping
// ErrStale (errors.As gives the *StaleError with the resource, the fence
// presented and the highest seen); it accepts a fence equal to the highest
// seen (the same holder may write twice). A once helper refusing a slot
// already applied returns an error wrapping ErrApplied (an *AppliedError),
// whatever the fence presented, and wrapping ErrStale as well when a newer
// holder applied it. A job that gets ErrApplied returns nil: the slot's
// effect exists. Each stale rejection increments
// slotcron_fence_rejections_total{resource} and logs msg="fence rejected"
// at level WARN; each refused repeat increments
// slotcron_fence_repeats_total{resource} and logs
// msg="effect already applied" at level INFO (see Register).
//
// # What it does not do
//
// Fences are comparable only when one issuer numbers them: the fences of
// one job (slotstore), or of one duty (leader). A resource written by two
// jobs must not share a name between them, or one job's fences would reject
// the other's. A fence proves nothing about the write itself: the resource
// must check it in the same atomic step as the write, which is what these
// helpers do; a check followed by a separate write leaves a window in which
// a newer holder writes between the two. A once record refuses a repeat
// only while it is kept: keep it at least as long as the job's history
// (the slot's marker), after which the slot cannot run again anyway. A
// Redis without persistence that restarts empty forgets fences and records
// alike; keep what must survive that in PostgreSQL.
package fence
