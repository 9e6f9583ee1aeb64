// Package fence makes a resource reject a stale holder.
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
// # Helpers
//
//   - PG.Check (and CheckPG) checks a fence inside the caller's PostgreSQL
//     transaction: one statement records the highest fence per resource
//     name (INSERT … ON CONFLICT … DO UPDATE … WHERE highest <= fence) and
//     raises an error for a lower one, which aborts the transaction, so the
//     caller's writes and the check commit or roll back together. PG.Ensure
//     creates its table and function.
//   - Redis.Set stores a value only if its fence is at least the highest
//     the key has seen, in one Lua script; Redis.Get reads it back.
//   - Memory does both in one process's memory, for tests and single-process
//     use. It fences nothing shared between processes.
//
// Every helper accepts a fence equal to the highest seen (the same holder
// may write twice) and rejects a lower one with an error wrapping ErrStale;
// errors.As gives the *StaleError with the resource, the fence presented
// and the highest seen. Each rejection increments
// slotcron_fence_rejections_total{resource} (see Register) and logs
// msg="fence rejected" with resource, fence and highest at level WARN.
//
// # What it does not do
//
// Fences are comparable only when one issuer numbers them: the fences of
// one job (slotstore), or of one duty (leader). A resource written by two
// jobs must not share a name between them, or one job's fences would reject
// the other's. A fence proves nothing about the write itself: the resource
// must check it in the same atomic step as the write, which is what these
// helpers do; a check followed by a separate write leaves a window in which
// a newer holder writes between the two.
package fence
