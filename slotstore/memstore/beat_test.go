package memstore_test

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestBeatKeep(t *testing.T) {
	storetest.BeatKeep(t, func(t *testing.T, clock func() time.Time) slotstore.Store {
		s := memstore.New(memstore.Options{Clock: clock})
		t.Cleanup(func() { s.Close() })
		return s
	})
}
