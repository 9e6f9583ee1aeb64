package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a session found.
type Report struct {
	Store    string
	Seed     uint64
	Duration time.Duration
	Replicas int
	Lease    time.Duration

	Faults      map[string]int // faults inflicted, by kind
	Slots       int            // slots due while the faults ran
	ExactlyOnce int            // of those, slots with exactly one effect (the job's checked style)
	// MemberFaults are the faults of single etcd members, in order: a
	// quorum stood through each, so they excuse no lost slot.
	MemberFaults []Fault
	// Duplicates counts slots with more than one effect, per write style:
	// once (fence.OncePG), fenced (stale-only check), unfenced, complete
	// (pgstore.CompleteTx).
	Duplicates   map[string]int
	Dups         []string       // each duplicated slot, for the record
	Lost         []LostSlot     // slots due with no effect
	Reexecutions int            // starts beyond each slot's first
	Refusals     map[string]int // refusals by the fence helpers: "once applied", "fenced stale", ...
	Takeovers    []Takeover
	Unmeasured   []string // killed holders whose slot no one took over
	EarlySkips   []string // slots recorded missed before their window closed
	Reruns       []string // slots started again after they were seen done
	// LossSkips are the slots recorded skipped for a loss of data (or as
	// due before the store began to record their job), listed only when
	// the jobs are declared after_data_loss: run, which owes them.
	LossSkips     []string
	RunsAfterLoss bool     // the jobs are declared after_data_loss: run
	FenceOrder    []string // attempts of a slot whose fences did not grow
	LateEffects   []string // holders still at work after their successor started
	// CheckLatency holds takeovers to the bound (lease left + lease/3);
	// short sessions on loaded machines report latency without judging it.
	CheckLatency bool
	Odd          []string // what nothing explains
}

// LostSlot is a slot with no effect.
type LostSlot struct {
	Key     string
	State   string   // its marker's last state seen, or "no marker"
	Reason  string   // its marker's reason
	Logged  []string // what replicas logged about it
	Fault   string   // the fault nearest to it
	Excused string   // why no effect was owed, or "" for a bug
}

// Takeover is the takeover of a holder taken out mid-run.
type Takeover struct {
	Key       string
	Fault     string        // how the holder was taken out: kill r2, stop r1, ...
	Latency   time.Duration // from taking the holder out to its successor's start
	Remaining time.Duration // the lease it had left then
	// Blocked names a replica frozen meanwhile on SQLite, where a frozen
	// process that holds the file's write lock blocks every other; such a
	// takeover is not held to the bound.
	Blocked string
}

// Excess is how much later than the lease left the takeover came.
func (t Takeover) Excess() time.Duration { return t.Latency - t.Remaining }

// FaultCount is the number of faults inflicted.
func (r *Report) FaultCount() int {
	n := 0
	for _, c := range r.Faults {
		n += c
	}
	return n
}

// Unexcused lists the lost slots nothing excuses.
func (r *Report) Unexcused() []LostSlot {
	return slices.DeleteFunc(slices.Clone(r.Lost), func(l LostSlot) bool { return l.Excused != "" })
}

// earlyTolerance allows for the store's and the host's reading of one
// clock: the lease end is read from the store, the start by the checker's
// database.
const earlyTolerance = 20 * time.Millisecond

// strictStyles are the write styles whose duplicates fail a session on
// store: the once-per-slot helper and CompleteTx on every store, and on
// etcd the stale-only fence check too, as no fault there takes a holder out
// between its effect and its finish, the one window that check leaves
// open.
func strictStyles(store string) []string {
	if store == StoreEtcd {
		return []string{"once", "complete", "fenced"}
	}
	return []string{"once", "complete"}
}

// Failures lists every way the session broke a guarantee.
func (r *Report) Failures() []string {
	var out []string
	for _, style := range strictStyles(r.Store) {
		if n := r.Duplicates[style]; n > 0 {
			out = append(out, fmt.Sprintf("%d slots with duplicate %s effects", n, style))
		}
	}
	if n := len(r.Unexcused()); n > 0 {
		out = append(out, fmt.Sprintf("%d slots lost", n))
	}
	if p99 := percentile(excesses(r.bounded()), 99); r.CheckLatency && p99 > r.Lease/3 {
		out = append(out, fmt.Sprintf("takeover p99 %v past the lease left, want <= one renewal interval (%v)", p99, r.Lease/3))
	}
	// A successor that starts before the holder's lease ended breaks
	// guarantee 1, whatever the latency bound.
	early := 0
	for _, t := range r.Takeovers {
		if t.Excess() < -earlyTolerance {
			early++
		}
	}
	if early > 0 {
		out = append(out, fmt.Sprintf("%d takeovers before the holder's lease ended", early))
	}
	for _, c := range []struct {
		list []string
		what string
	}{
		{r.Unmeasured, "killed holders whose slot no one took over"},
		{r.Reruns, "slots started again after they were done"},
		{r.LossSkips, "slots skipped for a loss of data although their jobs run after one"},
		{r.FenceOrder, "slots whose attempts' fences did not grow"},
		{r.LateEffects, "holders still at work after their successor started"},
	} {
		if n := len(c.list); n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	if n := len(r.EarlySkips); n > 0 {
		out = append(out, fmt.Sprintf("%d slots skipped before they were due", n))
	}
	if n := len(r.Odd); n > 0 {
		out = append(out, fmt.Sprintf("%d things nothing explains", n))
	}
	return out
}

// bounded lists the takeovers held to the bound: those no frozen SQLite
// lock holder blocked.
func (r *Report) bounded() []Takeover {
	return slices.DeleteFunc(slices.Clone(r.Takeovers), func(t Takeover) bool { return t.Blocked != "" })
}

func excesses(ts []Takeover) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Excess())
	}
	return out
}

func latencies(ts []Takeover) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Latency)
	}
	return out
}

// percentile is the p-th percentile of ds by the nearest rank; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)]
}

// String is the report for a person: the figures, then every finding.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos on %s: seed %d, %v of faults, %d replicas, lease %v\n", r.Store, r.Seed, r.Duration, r.Replicas, r.Lease)
	kinds := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	fmt.Fprintf(&b, "  faults: %d (", r.FaultCount())
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Faults[k])
	}
	b.WriteString(")\n")
	for _, f := range r.MemberFaults {
		fmt.Fprintf(&b, "  %s %s at %s, for %v\n", f.Kind, f.Detail, f.At.UTC().Format("15:04:05.000"), ms(f.Until.Sub(f.At)))
	}
	fmt.Fprintf(&b, "  slots: %d due, %d with exactly one effect, %d lost (%d excused), %d re-executions\n",
		r.Slots, r.ExactlyOnce, len(r.Lost), len(r.Lost)-len(r.Unexcused()), r.Reexecutions)
	styles := make([]string, 0, len(r.Duplicates))
	for k := range r.Duplicates {
		styles = append(styles, k)
	}
	slices.Sort(styles)
	b.WriteString("  duplicate effects:")
	for _, k := range styles {
		fmt.Fprintf(&b, " %s %d", k, r.Duplicates[k])
	}
	var strict []string
	for _, k := range strictStyles(r.Store) {
		if _, ok := r.Duplicates[k]; ok {
			strict = append(strict, k)
		}
	}
	fmt.Fprintf(&b, " (a duplicate fails the session in: %s)\n", strings.Join(strict, ", "))
	refs := make([]string, 0, len(r.Refusals))
	for k, n := range r.Refusals {
		refs = append(refs, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(refs)
	fmt.Fprintf(&b, "  fence refusals: %s\n", strings.Join(refs, ", "))
	bounded := r.bounded()
	ls := latencies(bounded)
	fmt.Fprintf(&b, "  takeovers measured: %d; latency min %v p50 %v p99 %v max %v; past the lease left p99 %v max %v\n",
		len(ls), ms(percentile(ls, 0)), ms(percentile(ls, 50)), ms(percentile(ls, 99)), ms(percentile(ls, 100)),
		ms(percentile(excesses(bounded), 99)), ms(percentile(excesses(bounded), 100)))
	if n := len(r.Takeovers) - len(bounded); n > 0 {
		bl := latencies(r.Takeovers)
		fmt.Fprintf(&b, "  takeovers blocked by a frozen SQLite lock holder: %d (with them, latency max %v)\n", n, ms(percentile(bl, 100)))
	}
	slow := slices.Clone(bounded)
	slices.SortFunc(slow, func(a, b Takeover) int { return int(b.Excess() - a.Excess()) })
	for _, t := range slow[:min(3, len(slow))] {
		fmt.Fprintf(&b, "  slowest takeover %s (%s): %v after the holder was taken out, %v past the lease it had left\n",
			t.Key, t.Fault, ms(t.Latency), ms(t.Excess()))
	}
	fmt.Fprintf(&b, "  skipped before due: %d; started again after done: %d; fence order broken: %d; at work after the successor started: %d; killed holders not taken over: %d\n",
		len(r.EarlySkips), len(r.Reruns), len(r.FenceOrder), len(r.LateEffects), len(r.Unmeasured))
	if r.RunsAfterLoss {
		fmt.Fprintf(&b, "  jobs declared after_data_loss: run; slots skipped for a loss of data: %d\n", len(r.LossSkips))
	}
	for _, l := range r.Lost {
		fmt.Fprintf(&b, "  lost %s: %s %q; nearest fault %s; excused: %q; logged %v\n", l.Key, l.State, l.Reason, l.Fault, l.Excused, l.Logged)
	}
	for _, d := range r.Dups {
		fmt.Fprintf(&b, "  duplicate %s\n", d)
	}
	for _, c := range []struct {
		list []string
		what string
	}{
		{r.EarlySkips, "early"}, {r.Unmeasured, "no takeover"}, {r.Reruns, "rerun"},
		{r.FenceOrder, "fence order"}, {r.LateEffects, "late"}, {r.LossSkips, "skipped for a loss of data"},
	} {
		for _, e := range c.list {
			fmt.Fprintf(&b, "  %s %s\n", c.what, e)
		}
	}
	for _, o := range r.Odd {
		fmt.Fprintf(&b, "  odd: %s\n", o)
	}
	return b.String()
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
