package etcdstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store { return open(t) })
}

func TestBeatKeep(t *testing.T) {
	storetest.BeatKeep(t, func(t *testing.T, clock func() time.Time) slotstore.Store {
		return openWith(t, etcdstore.Options{Clock: clock})
	})
}

// The suite again with the smallest transactions the store accepts, so
// batches split into many, and a transaction holds little beside one claim.
func TestConformanceSmallTransactions(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store {
		return openWith(t, etcdstore.Options{MaxTxnOps: etcdstore.MinMaxTxnOps})
	})
}
