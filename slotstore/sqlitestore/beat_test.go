package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
	"github.com/slotcron/slotcron/slotstore/storetest"
)

func TestBeatKeep(t *testing.T) {
	storetest.BeatKeep(t, func(t *testing.T, clock func() time.Time) slotstore.Store {
		return openWith(t, sqlitestore.Options{Path: filepath.Join(t.TempDir(), "slots.db"), Clock: clock})
	})
}
