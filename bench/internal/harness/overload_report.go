package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// overloadRows reports each overload measurement in a few rows.
func overloadRows(res *results) []row {
	var rows []row
	for _, m := range res.overload {
		w := workload{jobs: m.jobs, everySecond: true}
		r := func(figure, value, notes string) row {
			return row{section: "7 overload", workload: w.String() + ", " + m.window.String(), who: "slotcron/memory",
				figure: figure, value: value, vs: "–", notes: notes, load: m.loadB + "→" + m.loadA}
		}
		if m.err != nil {
			rows = append(rows, r("overload", skipped(m.err), ""))
			continue
		}
		rows = append(rows,
			r("max_running in force", itoa(m.maxRunning), "the cap on runs in flight (-overload-max-running; 0 leaves the default)"),
			r("max RSS · max goroutines", mib(m.maxRSS)+" · "+itoa(m.maxGoroutines),
				fmt.Sprintf("VmRSS and runtime.NumGoroutine sampled every 100 ms, the harness's own share included (RSS %s before scheduler.New; memstore's markers are in the process); VmHWM at the end %s", mib(m.rssBefore), mib(m.hwm))),
			r("the replica's own share at most: heap · goroutine stacks",
				mib(m.share.replica)+" · "+mib(m.share.stacks),
				fmt.Sprintf("the heap profile every 5 s (as of the last collection, sampled bytes scaled up as pprof does): what was allocated under no frame of memstore's or the harness's; at that sample memstore held %s and the harness %s; stacks are runtime.MemStats.StackInuse",
					mib(m.share.store), mib(m.share.harness))),
			r("slots of the window: started · recorded skipped · neither",
				fmt.Sprintf("%d · %d · %d of %d", m.started, m.skipped, m.neither, m.expected),
				fmt.Sprintf("after a drain of %v; the store's markers of the window's slots (History, by state and reason): %s; duplicates %d; slotcron_slots_missed_total over the whole run, by reason: %s%s",
					m.drain, byCount(m.recorded), m.duplicates, byCount(m.missedMetric), neitherWhen(m))),
			r("Run returned after cancel", m.stop.Round(time.Millisecond).String(),
				fmt.Sprintf("bound: shutdown_grace + 1 s = %v", m.grace+time.Second)),
		)
	}
	return rows
}

// byCount writes a map of counts as "key n · key n", the largest first.
func byCount(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, " · ")
}

// mib writes b bytes in MiB.
func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// neitherWhen says which seconds of the window hold the slots neither
// started nor recorded, if any.
func neitherWhen(m overload) string {
	if m.neitherFrom < 0 {
		return ""
	}
	return fmt.Sprintf("; the slots neither started nor recorded are of seconds %d–%d of the window (from 0)", m.neitherFrom, m.neitherTo)
}
