package harness

import (
	"runtime"
	"testing"
)

var kept [][]byte

// A large buffer the harness allocates and keeps is the harness's share,
// not the replica's.
func TestHeapShareCountsTheHarnessApart(t *testing.T) {
	before := measureHeapShare()
	kept = append(kept, make([]byte, 64<<20))
	runtime.GC()
	after := measureHeapShare()
	if grew := int64(after.harness) - int64(before.harness); grew < 48<<20 {
		t.Errorf("the harness's share grew by %d bytes for a 64 MiB buffer it keeps", grew)
	}
	if grew := int64(after.replica) - int64(before.replica); grew > 16<<20 {
		t.Errorf("the replica's share grew by %d bytes for the harness's buffer", grew)
	}
	kept = nil
}

func TestNeutralFrames(t *testing.T) {
	for fn, want := range map[string]bool{
		modPath + "slotstore.Marker.Ref":                   true,
		modPath + "slotstore/internal/rules.ApplySkip":     true,
		modPath + "slotstore/memstore.(*Store).put":        false,
		modPath + "scheduler/internal/engine.(*loop).wake": false,
		modPath + "slotstore/redisstore.(*Store).Claim":    false,
	} {
		if got := neutralFrame(fn); got != want {
			t.Errorf("neutralFrame(%s) = %v, want %v", fn, got, want)
		}
	}
}
