package pgstore_test

import (
	"testing"

	"github.com/slotcron/slotcron/slotstore/internal/difftest"
)

// TestDecisionTableMatchesMemstore drives pgstore and memstore, whose claims
// are the decision table in Go, through the same random operations and
// compares every answer: the claim function must encode the same table. A
// lease of a microsecond has expired by the next call, since pgstore's clock
// counts microseconds.
func TestDecisionTableMatchesMemstore(t *testing.T) {
	t.Parallel()
	for seed := range uint64(2) {
		difftest.Run(t, newStore(t), difftest.Options{Seed: seed})
	}
}
