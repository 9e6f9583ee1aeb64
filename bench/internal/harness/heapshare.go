package harness

import (
	"math"
	"runtime"
	"strings"
)

// heapShare is the live heap, as the heap profile has it at the last
// collection, by who allocated it, and the goroutine stacks in use.
type heapShare struct {
	store, harness, replica uint64 // bytes
	stacks                  uint64 // bytes
}

// Frames that decide whose an allocation is: the innermost of them on its
// stack. The store's shared types and rules allocate for whichever store
// calls them, so they decide nothing.
const (
	modPath     = "github.com/slotcron/slotcron/"
	storeFrames = modPath + "slotstore/memstore."
	benchFrames = modPath + "bench/"
)

func neutralFrame(fn string) bool {
	return strings.HasPrefix(fn, modPath+"slotstore.") || strings.HasPrefix(fn, modPath+"slotstore/internal/")
}

// measureHeapShare reads the heap profile and scales each record's
// sampled bytes up as pprof does (an allocation of s bytes is sampled with
// probability 1 − e^(−s/rate)). What no frame of slotcron allocated (the
// runtime's own, a library's called from the runtime) counts as the
// replica's.
func measureHeapShare() heapShare {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	var h heapShare
	for _, r := range recs {
		objs, size := r.InUseObjects(), r.InUseBytes()
		if objs <= 0 || size <= 0 {
			continue
		}
		est := uint64(float64(size) / (1 - math.Exp(-float64(size)/float64(objs)/rate)))
		switch ownerOf(r.Stack()) {
		case storeFrames:
			h.store += est
		case benchFrames:
			h.harness += est
		default:
			h.replica += est
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.stacks = ms.StackInuse
	return h
}

// ownerOf is storeFrames, benchFrames or "" (the replica) for an
// allocation's stack.
func ownerOf(stack []uintptr) string {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		switch fn := f.Function; {
		case strings.HasPrefix(fn, storeFrames):
			return storeFrames
		case strings.HasPrefix(fn, benchFrames):
			return benchFrames
		case strings.HasPrefix(fn, modPath) && !neutralFrame(fn):
			return ""
		}
		if !more {
			return ""
		}
	}
}
