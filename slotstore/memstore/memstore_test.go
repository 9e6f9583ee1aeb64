package memstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) slotstore.Store {
		s := memstore.New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
