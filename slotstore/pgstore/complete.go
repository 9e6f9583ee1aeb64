package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// CompleteOption adjusts what CompleteTx records.
type CompleteOption func(*completion)

type completion struct {
	schema   string
	duration time.Duration
}

// InSchema names the schema of the store holding the run's slot, when it
// is not DefaultSchema.
func InSchema(schema string) CompleteOption { return func(c *completion) { c.schema = schema } }

// WithDuration records how long the run took, as FinishParams.Duration
// does.
func WithDuration(d time.Duration) CompleteOption { return func(c *completion) { c.duration = d } }

// CompleteTx marks run's slot succeeded inside tx, the job's own
// transaction, so that the job's effect and the slot's completion commit
// together or not at all. It succeeds only while run.Fence is the slot's
// fence and the slot is running; otherwise it changes nothing and returns an
// error wrapping slotstore.ErrLeaseLost, and the caller must roll tx back:
// the slot was taken over, and the effect belongs to the new holder.
//
// The UPDATE locks the slot's marker until tx ends, so a takeover that
// starts meanwhile waits for tx and then sees the slot done (tx committed)
// or running under the old fence (tx rolled back). Call CompleteTx last,
// just before Commit, and keep the rest short: claims of the job wait for
// that lock. Once tx has committed, the engine's own Finish for the run
// succeeds and changes nothing: Finish of a slot already done under its
// fence is a no-op, as the slotstore contract requires.
//
// tx must be a transaction on the database holding the store; run is the
// jobs.Run the engine handed the job.
func CompleteTx(ctx context.Context, tx pgx.Tx, run jobs.Run, opts ...CompleteOption) error {
	c := completion{schema: DefaultSchema}
	for _, o := range opts {
		o(&c)
	}
	ref := slotstore.Ref{Job: run.Job, Slot: run.Slot.UTC().Truncate(time.Second), Fence: run.Fence}
	op := fmt.Sprintf("complete %s fence %d", key(ref.Job, ref.Slot), ref.Fence)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if err := checkSchema(c.schema); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	sql := strings.ReplaceAll(completeSQL, "{schema}", quote(c.schema))
	tag, err := tx.Exec(ctx, sql, ref.Job, ref.Slot, ref.Fence, int64(c.duration))
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: %s: %w", op, slotstore.ErrLeaseLost)
	}
	return nil
}
