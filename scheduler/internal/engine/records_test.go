package engine

import (
	"testing"

	"github.com/slotcron/slotcron/slotstore/memstore"
)

// A store is named by its Go package when the configuration names none.
func TestRecordsKind(t *testing.T) {
	if k := (Records{st: memstore.New(memstore.Options{})}).Kind(); k != "memstore" {
		t.Errorf("a memory store's kind %q, want its package's name", k)
	}
}
