// Package slotstore is the contract between the slotcron engine and the
// stores that hold slot markers: the Store interface, its parameter and result
// types, and its errors. Backends live in subpackages (memstore, sqlitestore,
// redisstore, pgstore); storetest is the conformance suite they all pass.
//
// # Markers
//
// A slot is (job, instant). The store keeps one marker per slot, created by
// the first claim and kept until its retention ends. A marker moves through
// these states:
//
//	            claim (first)
//	(none) ─────────────────────▶ running ──finish──▶ done (succeeded | failed | timeout)
//	                              │  ▲  │
//	                   release    │  │  │ lease expired, then claim:
//	                              ▼  │  │   on_crash retry, attempts left → running (attempt+1, new fence)
//	                          released  │   on_crash skip or attempts spent → abandoned
//	                      (claim: running, attempt+1, new fence)
//
// done and abandoned are final: no claim ever wins the slot again while the
// marker is retained (guarantee 3).
//
// # Guarantees every backend makes
//
//  1. One live holder: at any instant at most one claim of a slot holds an
//     unexpired lease. Lease expiry is judged by the store's clock.
//  2. Fences only grow: every winning claim of any slot of a job, first claim
//     or takeover, returns a fence greater than every fence issued before for
//     that job, across restarts of the store.
//  3. A finished slot never runs again: Claim never wins a slot whose marker
//     is done or abandoned.
//  4. A dead holder's slot is not lost: once the lease of a running slot has
//     expired, the next Claim takes it over (attempt+1, higher fence) or,
//     with OnCrash skip or no attempts left, marks it abandoned.
//
// # Fenced mutations
//
// Renew, Finish and Release present the Ref the claim returned. Each succeeds
// only while the slot is running and its fence is the presented one;
// otherwise it returns ErrLeaseLost and changes nothing. The one exception:
// Finish of a slot already done under the presented fence returns nil, so a
// retried Finish is safe. A renewal that
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
