// Package storetest is the conformance suite every slotstore.Store backend
// runs, shaped like testing/slogtest: one call checks the whole contract.
//
// A backend's test calls Run with a factory that returns a fresh, empty store
// and registers its own cleanup:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) slotstore.Store {
//			s, err := mystore.Open(t.Context(), ...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run calls the factory once per subtest and runs the subtests in parallel,
// so the stores it returns must not share markers or fences. Run closes each
// store when its subtest ends, before the factory's own cleanup runs, so a
// backend's Close must tolerate being called twice.
//
// # What it checks
//
//   - One winner: many replicas claiming one slot at once get exactly one
//     Won; the others get Held with a remaining lease in (0, lease].
//   - Fences only grow per job, across slots, takeovers, releases and the
//     entries of one batch; different jobs count independently.
//   - Batches: results come back in request order, each with its own
//     status (won, held, finished, abandoned, and held for a slot claimed
//     earlier in the same batch); a batch with one invalid request fails
//     with ErrInvalid and changes nothing.
//   - Slots are normalised to the UTC second, whatever their location or
//     sub-second part.
//   - Finished and abandoned slots are final, even after their lease would
//     have expired; a live lease makes a claim Held.
//   - Takeover of an expired slot (attempt+1, higher fence, PrevHolder),
//     OnCrash skip and MaxAttempts abandoning it, and release making a slot
//     claimable at once, even past MaxAttempts.
//   - TakeoverOnly claims never create a marker (Absent) and take over an
//     expired slot like any claim.
//   - Renew, Finish and Release with a stale or wrong fence, or on a slot
//     never claimed, fail with ErrLeaseLost and change nothing; so do Renew
//     and Release of a finished slot, while Finish again under the finishing
//     fence succeeds and changes nothing; renewing keeps competitors out past the original lease, also
//     when the renewal arrives after the lease ran out but before anyone else
//     claimed.
//   - Abandoned markers say why (Reason "on_crash skip" or "max attempts").
//   - Overlap forbid: a first claim is recorded skipped (Reason "overlap",
//     the claiming replica, fence and attempt 0, no fence issued) while
//     another slot of the job runs under a live lease, including one won
//     earlier in the same batch; not for an expired lease, another job, a
//     takeover-only claim or a takeover; skipped is final.
//   - Overlap replace: a first claim wins and supersedes every other running
//     slot of the job, live or expired, oldest first in Replaced, also one
//     won earlier in the batch; the replaced markers keep their fence, name
//     the winner's slot, and their holders' Renew, Finish and Release fail
//     with ErrLeaseLost and change nothing; replaced is final; a takeover
//     supersedes nothing.
//   - Overlap queue: a first claim changes nothing and answers Queued (the
//     job and slot alone, no fence issued, Remaining the least time left on
//     the leases of the job's other slots running under a live lease,
//     including one won earlier in the same batch); once they end, the
//     same claim wins with a higher fence; also, with Remaining 0, for an
//     expired lease whose slot a takeover may still win (on_crash retry,
//     attempts left), until that takeover's run ends; not for an expired
//     lease with on_crash skip or attempts spent, another job, a
//     takeover-only claim or a takeover; before its NotBefore it is
//     NotYet, and a slot older than the generation is skipped for data
//     loss.
//   - Retries: Finish with RetryAt makes the slot retrying; claims answer
//     Waiting until it is due, then win with attempt+1, a higher fence and
//     Claim.Retry, whatever OnCrash and MaxAttempts, also takeover-only;
//     Finish again under the same fence succeeds, Renew and Release fail;
//     RetryAt with Succeeded is ErrInvalid.
//   - Skip records slots without a marker with the given reason and leaves
//     every other slot alone, answering held, waiting, finished or skipped
//     as a claim would; order is kept; an invalid request fails the batch
//     with ErrInvalid and changes nothing.
//   - Pauses of jobs and of the whole cluster round-trip, sorted and
//     idempotent; manual claims are recorded as such, kept through
//     takeovers, and obey overlap.
//   - Pause notes: who, why and when by the store's clock, renewed by a
//     second pause, deleted by a resume, at most 1,000 bytes (ErrInvalid).
//     Beats: listed by name with what they said and when the store saw
//     them, replaced whole, live until their TTL passes; invalid beats are
//     ErrInvalid. BeatKeep (with an injectable clock): kept, not live, until
//     BeatKeep after the TTL, then gone.
//   - Backfill: a Backfill claim wins a skipped slot (not for data loss, of
//     its job's generation, skipped since it began) once, as a first claim
//     (attempt 1, a higher fence, marked Backfill, a mark takeovers keep),
//     answers NotYet before its NotBefore, and
//     with forbid changes nothing while another slot runs; ordinary claims
//     still lose skipped slots; replace or a term is ErrInvalid; concurrent
//     backfills have one winner; once the store's clock has reached Slot +
//     Retain, a backfill creates no marker (Absent) and loses a skipped
//     slot, as a takeover-only claim.
//   - The actions log: an append returns the entry as stored, with an
//     increasing Seq and the store's time, and text byte for byte; an
//     invalid entry is ErrInvalid naming its field and appends nothing;
//     Actions lists newest first, filters by Who, Kind, Target and Since,
//     and pages by Before without skipping or repeating an entry;
//     concurrent appends get distinct Seqs, all listed; Prune deletes the
//     entries past their retention by the store's clock, and counts them.
//   - History order, job and state filters (every state), limits and fields;
//     Prune's retention and lease rules (a retrying marker is kept until its
//     retry is due) and its counts; ErrInvalid for bad parameters;
//     ErrClosed after Close.
//
// # Time
//
// Leases expire in real time, by the store's own clock, because shared
// backends cannot have their clocks faked. The suite uses leases of 150 ms
// where it needs them to expire and retries 200 ms ahead, and waits for
// them by polling the store for the condition it needs, with a deadline
// of seconds, not by sleeping a fixed time. It waits for a lease to end by
// retrying a claim (a Held or Waiting claim changes nothing) or a Skip of
// the slot (which leaves a slot that has a marker alone and reports the
// lease time that remains), and for the store's clock to reach an instant
// by a Skip with that NotBefore of a slot of a job it uses for nothing
// else. A few checks of the times a store reports allow for its clock to
// differ from the test process's by a few tens of milliseconds, as it does
// for a server on the same host. The whole suite takes a few seconds.
package storetest
