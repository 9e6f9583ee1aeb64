package pgstore

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// batch holds the claim function's arguments, one array a parameter.
type batch struct {
	jobs                                []string
	slots, keeps                        []time.Time
	leases                              []int64
	maxes                               []int32
	crashSkips, takeover, terms, manual []bool
	skipping, backfill                  []bool
	overlaps, reasons                   []string
	specs                               []string             // nil while no request names a spec
	notBefore                           []pgtype.Timestamptz // null where zero
	notAfter                            []pgtype.Timestamptz // null where zero (every skip's)
}

func newBatch(n int) *batch {
	return &batch{
		jobs: make([]string, 0, n), slots: make([]time.Time, 0, n), keeps: make([]time.Time, 0, n),
		leases: make([]int64, 0, n), maxes: make([]int32, 0, n), crashSkips: make([]bool, 0, n),
		takeover: make([]bool, 0, n), terms: make([]bool, 0, n), manual: make([]bool, 0, n), skipping: make([]bool, 0, n),
		backfill: make([]bool, 0, n),
		overlaps: make([]string, 0, n), reasons: make([]string, 0, n), notBefore: make([]pgtype.Timestamptz, 0, n),
		notAfter: make([]pgtype.Timestamptz, 0, n),
	}
}

func (b *batch) add(r slotstore.ClaimRequest, skipping bool, reason string, notBefore time.Time) {
	b.jobs, b.slots, b.keeps = append(b.jobs, r.Job), append(b.slots, r.Slot), append(b.keeps, r.Slot.Add(r.Retain))
	b.leases, b.maxes = append(b.leases, micros(r.Lease)), append(b.maxes, int32(min(r.MaxAttempts, 1<<30)))
	b.crashSkips, b.takeover = append(b.crashSkips, r.OnCrash == policy.OnCrashSkip), append(b.takeover, r.TakeoverOnly)
	b.terms, b.manual, b.skipping = append(b.terms, r.Term), append(b.manual, r.Manual), append(b.skipping, skipping)
	b.backfill = append(b.backfill, r.Backfill)
	b.overlaps, b.reasons = append(b.overlaps, string(r.Overlap)), append(b.reasons, reason)
	b.notBefore = append(b.notBefore, pgtype.Timestamptz{Time: notBefore, Valid: !notBefore.IsZero()})
	b.notAfter = append(b.notAfter, pgtype.Timestamptz{Time: r.NotAfter, Valid: !r.NotAfter.IsZero()})
}

// spec records that request i, the last added, names spec: a batch that
// names none sends no specs, and the claim function then reads no
// catalog row.
func (b *batch) spec(i int, spec string) {
	if spec == "" {
		return
	}
	b.specs = append(b.specs, make([]string, len(b.jobs)-len(b.specs))...)
	b.specs[i] = spec
}

// args are the claim function's arguments for b's requests, by replica
// and its incarnation.
func (b *batch) args(replica, incarnation string) []any {
	return []any{replica, incarnation, b.jobs, b.slots, b.leases, b.crashSkips, b.maxes,
		b.keeps, b.takeover, b.overlaps, b.terms, b.manual, b.skipping, b.reasons, b.notBefore, slotstore.ReasonDataLoss,
		b.backfill, b.specsArg(), b.notAfter}
}

// specsArg is the claim function's p_spec: null when no request names a
// spec, else one a request.
func (b *batch) specsArg() []string {
	if b.specs == nil {
		return nil
	}
	return append(b.specs, make([]string, len(b.jobs)-len(b.specs))...)
}
