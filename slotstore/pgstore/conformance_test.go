package pgstore_test

import (
	"testing"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store { return newStore(t) })
}
