// Package jobs is what a job sees: the Registry that binds job names to Go
// functions, the Func signature, and the Run handed to each execution.
//
// A job is registered once, in code, at start-up:
//
//	reg := jobs.NewRegistry()
//	reg.Register("invoices", func(ctx context.Context, run jobs.Run) error {
//		return billing.Generate(ctx, run.Fence)
//	})
//
// The scheduler calls the function only on the replica that won the slot's
// claim. The context is cancelled when the job's timeout passes, when the
// replica shuts down, or when the replica can no longer trust its lease; a
// job should return promptly once ctx is done. A slot may start twice (its
// holder died mid-run and a successor took it over), so write the effect
// once per slot: through fence.OncePG or fence.Redis.SetOnce, which record
// Run.Key() with the effect and refuse a repeat and a stale holder, or in the
// same transaction as the slot's completion (pgstore.CompleteTx). Passing
// Run.Fence to a resource's fence check alone refuses only a stale holder.
package jobs
