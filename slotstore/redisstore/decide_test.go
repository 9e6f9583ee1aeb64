package redisstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore/internal/difftest"
)

// TestDecisionTableMatchesMemstore drives redisstore and memstore, whose
// claims are the decision table in Go, through the same random operations
// and compares every answer: claim.lua must encode the same table. Redis
// counts milliseconds, so a lease of one has expired after the pause of one
// before the next call.
func TestDecisionTableMatchesMemstore(t *testing.T) {
	r := testserver.StartRedis(t)
	for seed := range uint64(2) {
		difftest.Run(t, open(t, r.Addr()), difftest.Options{Seed: seed, Steps: 300, Short: time.Millisecond, Pause: time.Millisecond})
	}
}
