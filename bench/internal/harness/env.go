package harness

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// loadAvg returns the first field of /proc/loadavg (the one-minute load
// average), or "?" where the file does not exist.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mallocs returns the cumulative count of heap objects allocated.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// heapAfterGC collects garbage twice and returns the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// probe is what is read around one measurement.
type probe struct {
	load    string
	cpu     time.Duration
	mallocs uint64
	at      time.Time
}

func takeProbe() probe {
	return probe{load: loadAvg(), cpu: processCPU(), mallocs: mallocs(), at: time.Now()}
}
