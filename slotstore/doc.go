// Package slotstore is the contract between the slotcron engine and the
// stores that hold slot markers: the Store interface, its parameter and result
// types, and its errors. Backends live in subpackages (memstore, sqlitestore,
// redisstore, pgstore); storetest is the conformance suite they all pass.
//
// # Markers
//
// A slot is (job, instant). The store keeps one marker per slot, created by
// the first claim (or by Skip) and kept until its retention ends. A marker
// moves through these states:
//
//	        claim (first)                  finish
//	(none) ───────────────▶ running ─────────────────────────────▶ done (succeeded | failed | timeout)
//	  │                     │ ▲  ▲ │ │ │
//	  │ claim with forbid   │ │  └─┘ │ │ lease expired, then claim: attempt+1, new fence
//	  │ while another slot  │ │      │ │
//	  │ runs; or Skip       │ │      │ └─ lease expired, then claim with on_crash skip
//	  ▼             release │ │      │    or attempts spent ───────────────────▶ abandoned
//	skipped                 ▼ │      └─ another slot claimed with replace ─────▶ replaced
//	                 released │
//	                        └─┘ claim: attempt+1, new fence
//
//	running ── finish failed or timeout, with RetryAt ──▶ retrying
//	retrying ── claim at or after RetryAt ──▶ running (attempt+1, new fence)
//
// done, abandoned, skipped and replaced are final (State.Final): no claim
// ever wins the slot again while the marker is retained (guarantee 3).
//
// # Policies
//
// Overlap (ClaimRequest.Overlap) is judged only when a claim would create
// the slot's first marker; takeovers, claims of released slots and retries
// are never checked. OverlapForbid records the slot skipped (Reason
// "overlap", Fence 0, no fence issued) while another slot of the job is
// running under a live lease, including one won earlier in the same batch.
// OverlapReplace wins the slot and makes every other running slot of the
// job, live lease or expired, replaced: its lease ends, its fence stays, and
// its holder's Renew, Finish and Release fail with ErrLeaseLost.
//
// A failed or timed-out run may ask for a retry (FinishParams.RetryAt): the
// slot waits in state retrying, claims before RetryAt answer Waiting and
// change nothing, and the first claim at or after it wins with attempt+1, a
// new fence and Claim.Retry set, whatever its OnCrash and MaxAttempts: the
// caller bounds retries. A takeover-only claim may take a due retry.
//
// Skip records slots the caller decided not to run (missed, caught up)
// with a reason, so history shows them; a slot that already has a marker
// is left alone. Pauses (SetPause, Pauses) are stored beside the markers so
// every replica reads the same ones. A manual trigger's claim sets
// ClaimRequest.Manual, which the marker keeps (Marker.Manual).
//
// Decide, Apply, Supersede and ApplySkip are the decision table in Go;
// backends that cannot run Go encode the same table, and storetest checks
// every backend against it.
//
// # Guarantees every backend makes
//
//  1. One live holder: at any instant at most one claim of a slot holds an
//     unexpired lease. Lease expiry is judged by the store's clock.
//  2. Fences only grow: every winning claim of any slot of a job, first claim
//     or takeover, returns a fence greater than every fence issued before for
//     that job, across restarts of the store.
//  3. A finished slot never runs again: Claim never wins a slot whose marker
//     is done, abandoned, skipped or replaced.
//  4. A dead holder's slot is not lost: once the lease of a running slot has
//     expired, the next Claim takes it over (attempt+1, higher fence) or,
//     with OnCrash skip or no attempts left, marks it abandoned.
//
// # Fenced mutations
//
// Renew, Finish and Release present the Ref the claim returned. Each succeeds
// only while the slot is running and its fence is the presented one;
// otherwise it returns ErrLeaseLost and changes nothing. The one exception:
// Finish of a slot already done or retrying under the presented fence
// returns nil and changes nothing, so a retried Finish is safe. A renewal that
// arrives after the lease expired but before any other claim still succeeds:
// no other holder exists, so guarantee 1 holds.
//
// # Failures
//
// A store error that leaves the outcome of a mutation unknown (the request
// was sent and its reply lost, a timeout) satisfies IsOutcomeUnknown. The
// caller must treat it as neither success nor failure: an unknown claim may
// have won, and its lease will expire and be taken over; an unknown finish
// may have been recorded or not.
//
// All methods are safe for concurrent use by many goroutines and, for the
// shared backends, by many processes.
package slotstore
