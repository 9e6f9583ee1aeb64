package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/slotstore"
)

// row is one row of an effects table.
type row struct {
	key     slotKey
	fence   int64
	attempt int
	replica string
	at      time.Time
}

// readRows reads table from db, every row.
func readRows(ctx context.Context, db *pgxpool.Pool, table string) ([]row, error) {
	rows, err := db.Query(ctx, `SELECT job, slot, fence, attempt, replica, at FROM `+table+` ORDER BY at`)
	if err != nil {
		return nil, fmt.Errorf("chaos: read %s: %w", table, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.key.job, &x.key.slot, &x.fence, &x.attempt, &x.replica, &x.at)
		x.key.slot = x.key.slot.UTC()
		return x, err
	})
}

// bySlot groups rows by slot.
func bySlot(rows []row) map[slotKey][]row {
	out := map[slotKey][]row{}
	for _, r := range rows {
		out[r.key] = append(out[r.key], r)
	}
	return out
}

// check reads what the replicas did and judges it.
func (s *session) check() *Report {
	ctx := context.Background()
	rep := &Report{Store: s.o.Store, Seed: s.o.Seed, Duration: s.o.Duration, Replicas: s.o.Replicas, Lease: s.o.Lease,
		Faults: map[string]int{}, Duplicates: map[string]int{}, Refusals: map[string]int{}, CheckLatency: s.o.LatencyBound}
	s.mu.Lock()
	faults := slices.Clone(s.faults)
	probes := slices.Clone(s.probes)
	odd := slices.Clone(s.odd)
	started, stopped := s.started, s.stopped
	s.mu.Unlock()
	for _, f := range faults {
		rep.Faults[f.Kind]++
		if f.etcdMember() {
			rep.MemberFaults = append(rep.MemberFaults, f)
		}
	}
	tables := map[string]map[slotKey][]row{}
	for _, t := range []string{"starts", "effect_once", "effect_fenced", "effect_plain"} {
		rows, err := readRows(ctx, s.effects, t)
		if err != nil {
			s.t.Fatal(err)
		}
		tables[t] = bySlot(rows)
	}
	if s.o.Store == StorePostgres {
		db, err := pgxpool.New(ctx, s.storeDSN)
		if err != nil {
			s.t.Fatal(err)
		}
		rows, err := readRows(ctx, db, "chaos_complete")
		db.Close()
		if err != nil {
			s.t.Fatal(err)
		}
		tables["chaos_complete"] = bySlot(rows)
	}
	styles := map[string]string{"effect_once": "once", "effect_fenced": "fenced", "effect_plain": "unfenced", "chaos_complete": "complete"}
	for t, style := range styles {
		if _, ok := tables[t]; !ok {
			continue
		}
		rep.Duplicates[style] = 0
		for k, rs := range tables[t] {
			if len(rs) > 1 {
				rep.Duplicates[style]++
				near := nearestFault(faults, k.slot, s.o.Deadline+3*s.o.Lease)
				rep.Dups = append(rep.Dups, fmt.Sprintf("%s: %d %s effects (fences %v); nearest fault %s", k, len(rs), style, fences(rs), near))
			}
		}
	}
	for _, rs := range tables["starts"] {
		rep.Reexecutions += len(rs) - 1
	}
	refusals, err := s.effects.Query(ctx, `SELECT style || ' ' || kind, count(*) FROM refusals GROUP BY 1`)
	if err == nil {
		for refusals.Next() {
			var k string
			var n int
			if refusals.Scan(&k, &n) == nil {
				rep.Refusals[k] = n
			}
		}
		refusals.Close()
	}
	lines := s.lines()
	// Slots due from one second after every replica had started until the
	// faults ended must each have had their effect once.
	for _, j := range s.jobs() {
		first := started.Add(time.Second).Truncate(j.every).Add(j.every)
		for at := first; !at.After(stopped); at = at.Add(j.every) {
			k := slotKey{j.name, at.UTC()}
			rep.Slots++
			switch len(tables[j.effect][k]) {
			case 0:
				rep.Lost = append(rep.Lost, s.classify(k, j.every, faults, lines))
			case 1:
				rep.ExactlyOnce++
			}
		}
	}
	rep.Takeovers, rep.Unmeasured = s.takeovers(probes, tables["starts"], faults, lines)
	rep.EarlySkips = s.earlySkips()
	var losses []time.Time // when the store lost its data, for jobs that run after it
	var back []time.Time   // when it was back from each loss
	if s.o.runsAfterLoss() {
		for _, f := range faults {
			if f.Kind == FaultRedisRestart || f.Kind == FaultRedisFlush {
				losses, back = append(losses, f.At), append(back, f.Until)
			}
		}
		rep.LossSkips, rep.RunsAfterLoss = s.lossSkips(), true
	}
	rep.Reruns = s.reruns(tables["starts"], losses, back)
	rep.FenceOrder = fenceOrder(tables["starts"], losses)
	late, err := s.lateEffects(ctx, tables["starts"], faults)
	if err != nil {
		s.t.Fatal(err)
	}
	rep.LateEffects = late
	rep.Odd = append(odd, alarms(lines)...)
	return rep
}

func fences(rs []row) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.fence)
	}
	return out
}

// lines returns the log lines of every replica.
func (s *session) lines() []logLine {
	var out []logLine
	for _, m := range s.members {
		out = append(out, m.allLines()...)
	}
	return out
}

// classify says what the store and the logs recorded of a slot with no
// effect, names the fault nearest to it, and excuses it only when the
// store lost its data around it or was down through its window. A slot
// seen done is never excused, but for a run that failed while the store
// was faulted: a job whose own transaction is on the store (CompleteTx)
// fails with it, and a failed run is a run, recorded, not a lost slot.
func (s *session) classify(k slotKey, period time.Duration, faults []Fault, lines []logLine) LostSlot {
	l := LostSlot{Key: k.String(), State: "no marker"}
	s.mu.Lock()
	versions := slices.Clone(s.markers[k])
	s.mu.Unlock()
	done, failed, dataLoss := false, false, false
	holder := ""
	for _, m := range versions {
		holder = m.Holder
		l.State, l.Reason = string(m.State), m.Reason
		done = done || m.State == slotstore.StateDone
		failed = m.State == slotstore.StateDone && m.Outcome != slotstore.Succeeded
		// A later loss can take the data-loss skip and another replica
		// record the slot missed: the first decision still stands.
		dataLoss = dataLoss || m.Reason == slotstore.ReasonDataLoss
	}
	slot := k.slot.Format(time.RFC3339)
	for _, ln := range lines {
		if ln.Job == k.job && ln.Slot == slot && ln.Msg != "run started" {
			l.Logged = append(l.Logged, fmt.Sprintf("%s: %s %s", ln.replica, ln.Msg, ln.Reason))
		}
	}
	around := s.o.Deadline + 3*s.o.Lease
	// running reports whether a run of the slot had started at t, within
	// around of it, and had not ended: by its log, or by its process's
	// kill a lease before t (a successor should have started it by then).
	// A slow job's takeovers may run it well past the slot's own window.
	running := func(t time.Time) bool {
		for _, st := range lines {
			if st.Job != k.job || st.Slot != slot || st.Msg != "run started" || st.Time.After(t) || t.Sub(st.Time) > around {
				continue
			}
			ended := slices.ContainsFunc(lines, func(ln logLine) bool {
				return ln.replica == st.replica && ln.Job == k.job && ln.Slot == slot && ln.Fence == st.Fence &&
					endMsgs[ln.Msg] && ln.Time.Before(t)
			}) || slices.ContainsFunc(faults, func(f Fault) bool {
				return f.Replica == st.replica && f.kill() &&
					!f.At.Before(st.Time) && f.At.Add(s.o.Lease).Before(t)
			})
			if !ended {
				return true
			}
		}
		return false
	}
	l.Fault = nearestFault(faults, k.slot, around)
	for _, f := range faults {
		d := faultDistance(f, k.slot)
		// The store itself, or the holder's connection to it.
		faulted := f.storeFault() || (f.Replica == holder &&
			(f.Kind == FaultCut || f.Kind == FaultBlackhole || f.Kind == FaultDelay))
		if failed && l.Excused == "" && faulted && d <= around {
			l.Excused = "the run failed while the store was faulted"
		}
		if done || l.Excused != "" {
			continue
		}
		// Jobs declared after_data_loss: run owe every slot a loss would
		// skip: only the store's being down excuses one.
		loss := (f.Kind == FaultRedisRestart || f.Kind == FaultRedisFlush) && !s.o.runsAfterLoss()
		switch {
		case loss && dataLoss && !f.At.After(k.slot.Add(s.o.Deadline)) && k.slot.Sub(f.At) <= period+around:
			// Guarantee 3 is conservative: the first claim of each job
			// after the loss begins its new generation, and a slot before
			// that is skipped, as it may have run before the loss.
			l.Excused = "the store lost its data"
		case loss && (d <= around || running(f.At)):
			// Running at the loss (its holder's lease went with the
			// marker, and a replica may record it missed later), or due
			// while it happened; never one seen done, above.
			l.Excused = "the store lost its data"
		case (f.Kind == FaultRedisRestart || f.Kind == FaultPGCrash) && f.At.Before(k.slot.Add(s.o.Deadline)) && f.Until.Add(s.o.Lease).After(k.slot):
			l.Excused = "the store was down"
		case s.o.Store == StoreSQLite && (f.Kind == FaultStop || f.Kind == FaultEffectStop) &&
			!f.At.After(k.slot) && !f.Until.Before(k.slot.Add(s.o.Deadline)) && storeFailed(lines, f.Replica, k.slot, k.slot.Add(s.o.Deadline)):
			// A replica frozen holding the file's write lock through the
			// slot's whole window: no replica could claim it (a limit of
			// the embedded store, stated in the README).
			l.Excused = "the SQLite file was locked by a frozen replica"
		}
	}
	return l
}

// faultDistance is how far f was from a slot: 0 when it lasted across it.
func faultDistance(f Fault, slot time.Time) time.Duration {
	if f.Until.After(slot) && f.At.Before(slot) {
		return 0
	}
	return f.At.Sub(slot).Abs()
}

// nearestFault names the fault nearest to a slot, within around of it, or
// "" when there is none.
func nearestFault(faults []Fault, slot time.Time, around time.Duration) string {
	best, out := time.Duration(1<<63-1), ""
	for _, f := range faults {
		if d := faultDistance(f, slot); d <= around && d < best {
			best = d
			out = fmt.Sprintf("%s %s at %+.1fs", f.Kind, f.who(), f.At.Sub(slot).Seconds())
		}
	}
	return out
}

// takeovers measures, for each holder taken out mid-run, how long until
// another replica started its slot, against the lease it had left. On
// SQLite a replica frozen while it held the file's write lock blocks every
// replica until it resumes; a takeover during which a replica (the holder
// too) was frozen and another's store calls failed is marked Blocked. A killed holder
// whose slot no one started again is listed as unmeasured, unless the
// store lost its data or went down meanwhile.
func (s *session) takeovers(probes []*probe, starts map[slotKey][]row, faults []Fault, lines []logLine) ([]Takeover, []string) {
	var out []Takeover
	var unmeasured []string
	// A successor killed as its run began may log the start and not live to
	// record it: its logged start counts too, if its process was killed
	// within a lease of it, before the run logged an end. (Any other run
	// that logged a start and recorded none never ran its job: a claim
	// whose reply came after its trust window, say.)
	logged := make(map[slotKey][]row)
	for _, ln := range lines {
		if ln.Msg != "run started" {
			continue
		}
		slot, err := time.Parse(time.RFC3339, ln.Slot)
		if err != nil {
			continue
		}
		killed := slices.ContainsFunc(faults, func(f Fault) bool {
			if f.Replica != ln.replica || !f.kill() ||
				f.At.Before(ln.Time) || f.At.After(ln.Time.Add(s.o.Lease)) {
				return false
			}
			return !slices.ContainsFunc(lines, func(e logLine) bool {
				return e.replica == ln.replica && e.Job == ln.Job && e.Slot == ln.Slot && e.Fence == ln.Fence &&
					endMsgs[e.Msg] && e.Time.Before(f.At)
			})
		})
		if !killed {
			continue
		}
		k := slotKey{job: ln.Job, slot: slot.UTC()}
		logged[k] = append(logged[k], row{key: k, fence: ln.Fence, attempt: ln.Attempt, replica: ln.replica, at: ln.Time})
	}
	for _, p := range probes {
		found := false
		both := append(slices.Clone(starts[p.key]), logged[p.key]...)
		slices.SortStableFunc(both, func(a, b row) int { return a.at.Compare(b.at) })
		for _, r := range both {
			if r.fence <= p.fence {
				continue
			}
			found = true
			t := Takeover{Key: p.key.String(), Fault: p.fault, Latency: r.at.Sub(p.at), Remaining: max(p.leaseEnd.Sub(p.at), 0)}
			if s.o.Store == StoreSQLite {
				for _, f := range faults {
					frozen := f.Kind == FaultStop || f.Kind == FaultEffectStop
					// The frozen replica may be the holder itself: its
					// process may have frozen inside a write.
					if frozen && f.At.Before(r.at) && f.Until.After(p.at) && storeFailed(lines, f.Replica, p.at, r.at) {
						t.Blocked = f.Kind + " " + f.Replica
					}
				}
			}
			out = append(out, t)
			break
		}
		killed := slices.ContainsFunc([]string{FaultKill, FaultEffectKill, FaultRunKill}, func(kind string) bool {
			return strings.HasPrefix(p.fault, kind+" ")
		})
		if found || !killed {
			continue // a frozen holder may resume in time and finish its slot
		}
		excused := false
		for _, f := range faults {
			if f.storeFault() && f.Until.After(p.at.Add(-time.Second)) && f.At.Before(p.leaseEnd.Add(s.o.Deadline)) {
				excused = true
			}
		}
		if !excused {
			unmeasured = append(unmeasured, fmt.Sprintf("%s: holder taken out (%s) at %s, fence %d; no successor started it",
				p.key, p.fault, p.at.UTC().Format(time.RFC3339Nano), p.fence))
		}
	}
	return out, unmeasured
}

// reruns lists every start of a slot after the slot was seen done, by a
// claim newer than the one that finished it (guarantee 3).
func (s *session) reruns(starts map[slotKey][]row, losses, back []time.Time) []string {
	// A start after a loss that took the slot's marker, soon after the
	// store came back, is no rerun for a job that runs after a loss: the
	// slot's first claim after it, or its holder's claim anew.
	soon := s.o.Deadline + 2*s.o.Lease
	afterLoss := func(done, at time.Time) bool {
		for i, l := range losses {
			if done.Before(l) && at.After(l) && at.Before(back[i].Add(soon)) {
				return true
			}
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, vs := range s.markers {
		for _, m := range vs {
			if m.State != slotstore.StateDone {
				continue
			}
			for _, r := range starts[k] {
				if r.fence > m.Fence && r.at.After(m.FinishedAt) && !afterLoss(m.FinishedAt, r.at) {
					out = append(out, fmt.Sprintf("%s done at %s (fence %d) started again by %s with fence %d at %s",
						k, m.FinishedAt.UTC().Format(time.RFC3339Nano), m.Fence, r.replica, r.fence, r.at.UTC().Format(time.RFC3339Nano)))
				}
			}
			break
		}
	}
	slices.Sort(out)
	return out
}

// fenceOrder lists slots whose attempts did not get growing fences, an
// attempt started under two claims (two holders of one attempt), and a
// fence two slots of one job share (guarantee 2: a claim's fence is above
// every fence of its job). Attempts are compared within the span between
// two losses of the store's data: a job that runs after a loss starts its
// slots' attempts again from 1 (its fences still grow), and a first attempt
// claimed ahead of its slot before a loss may start after it (lostAround).
func fenceOrder(starts map[slotKey][]row, losses []time.Time) []string {
	var out []string
	owner := map[string]map[int64]slotKey{} // job → fence → the slot that started under it
	for k, rs := range starts {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(a, b row) int {
			return cmp.Or(epoch(losses, a.at)-epoch(losses, b.at), a.attempt-b.attempt, cmp.Compare(a.fence, b.fence))
		})
		for i := 1; i < len(rs); i++ {
			switch {
			case epoch(losses, rs[i].at) != epoch(losses, rs[i-1].at):
				if rs[i].fence <= rs[i-1].fence {
					out = append(out, fmt.Sprintf("%s: fence %d after a loss of data, not above %d before it", k, rs[i].fence, rs[i-1].fence))
				}
			case rs[i].attempt > rs[i-1].attempt && rs[i].fence <= rs[i-1].fence:
				out = append(out, fmt.Sprintf("%s: attempt %d fence %d after attempt %d fence %d",
					k, rs[i].attempt, rs[i].fence, rs[i-1].attempt, rs[i-1].fence))
			case rs[i].attempt == rs[i-1].attempt && rs[i].fence != rs[i-1].fence &&
				!(rs[i].attempt == 1 && lostAround(losses, k.slot, later(rs[i].at, rs[i-1].at))):
				out = append(out, fmt.Sprintf("%s: attempt %d started under two claims, fences %d and %d",
					k, rs[i].attempt, rs[i-1].fence, rs[i].fence))
			}
		}
		if owner[k.job] == nil {
			owner[k.job] = map[int64]slotKey{}
		}
		for _, r := range rs {
			if o, ok := owner[k.job][r.fence]; ok && !o.slot.Equal(k.slot) {
				out = append(out, fmt.Sprintf("%s: fence %d, as %s had", k, r.fence, o))
			}
			owner[k.job][r.fence] = k
		}
	}
	slices.Sort(out)
	return out
}

// lateEffects lists effects of work that honours its context whose last
// look at the context came after a successor had started the slot: the
// holder did not stop before its successor started (guarantee 5). A holder
// frozen meanwhile is excused: a stopped process cannot cancel anything.
func (s *session) lateEffects(ctx context.Context, starts map[slotKey][]row, faults []Fault) ([]string, error) {
	rows, err := s.effects.Query(ctx, `SELECT job, slot, fence, replica, checked FROM effect_plain WHERE checked IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("chaos: read effect_plain: %w", err)
	}
	type late struct {
		key     slotKey
		fence   int64
		replica string
		checked time.Time
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (late, error) {
		var l late
		err := r.Scan(&l.key.job, &l.key.slot, &l.fence, &l.replica, &l.checked)
		l.key.slot = l.key.slot.UTC()
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: read effect_plain: %w", err)
	}
	var out []string
	for _, l := range ls {
		var mine time.Time // when the writer started its attempt
		for _, r := range starts[l.key] {
			if r.fence == l.fence {
				mine = r.at
			}
		}
		for _, r := range starts[l.key] {
			if r.fence <= l.fence || !r.at.Before(l.checked) {
				continue
			}
			frozen := false
			for _, f := range faults {
				stop := f.Kind == FaultStop || f.Kind == FaultEffectStop || f.Kind == FaultTxStop || f.Kind == FaultRunStop
				if stop && f.Replica == l.replica && f.At.Before(l.checked) && f.Until.After(mine) {
					frozen = true
				}
			}
			if !frozen {
				out = append(out, fmt.Sprintf("%s: %s (fence %d) still working at %s, after %s started it with fence %d at %s",
					l.key, l.replica, l.fence, l.checked.UTC().Format(time.RFC3339Nano), r.replica, r.fence, r.at.UTC().Format(time.RFC3339Nano)))
			}
			break
		}
	}
	slices.Sort(out)
	return out, nil
}

// storeFailed reports whether a replica other than frozen logged a failed
// store call between from and to: the store was blocked for it.
func storeFailed(lines []logLine, frozen string, from, to time.Time) bool {
	for _, l := range lines {
		if l.replica != frozen && !l.seen.Before(from) && !l.seen.After(to) &&
			(l.Msg == "claim failed" || l.Msg == "lease renewal failed") {
			return true
		}
	}
	return false
}

// reasonNewJob is the engine's reason (scheduler/internal/engine) for a
// slot due before the store began to record its job.
const reasonNewJob = "not caught up: the store has just begun to record the job"

// earlySkips lists every slot the store recorded missed before its
// starting window closed by the store's clock. A slot skipped because no
// claim of it can ever win is no miss, and may be recorded at once: one the
// store refused for data loss, one passed over for overlap, and one due
// before the store began to record its job, which the store refuses as it
// does a slot from before a loss.
func (s *session) earlySkips() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, vs := range s.markers {
		for _, m := range vs {
			if m.State != slotstore.StateSkipped || m.Reason == slotstore.ReasonDataLoss || m.Reason == slotstore.ReasonOverlap ||
				m.Reason == reasonNewJob {
				continue
			}
			if m.ClaimedAt.Before(k.slot.Add(s.o.Deadline)) {
				out = append(out, fmt.Sprintf("%s skipped (%s) at %s, %.3fs before its window closed", k, m.Reason,
					m.ClaimedAt.UTC().Format(time.RFC3339Nano), k.slot.Add(s.o.Deadline).Sub(m.ClaimedAt).Seconds()))
			}
		}
	}
	slices.Sort(out)
	return out
}

// alarms lists the log lines that say something went wrong inside a
// replica: a race, a panic, a holder trusted after its lease was lost.
func alarms(lines []logLine) []string {
	var out []string
	for _, l := range lines {
		if alarming(l.raw) {
			out = append(out, l.replica+": "+l.raw)
		}
	}
	return out
}

// lostAround reports whether a loss of the store's data (losses: only for
// jobs declared after_data_loss: run) came after the
// first claim of slot could have been made (slotstore.ClaimLead before it,
// claimed ahead) and before at: a first attempt claimed ahead before the
// loss and started after it, and one claimed anew after it (a job declared
// after_data_loss: run), are two first attempts of one span by their
// starts, not two holders of one attempt.
func lostAround(losses []time.Time, slot, at time.Time) bool {
	from := slot.Add(-slotstore.ClaimLead)
	return slices.ContainsFunc(losses, func(l time.Time) bool { return l.After(from) && l.Before(at) })
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// epoch is how many of losses came before t: the span between two losses
// of the store's data that t falls in.
func epoch(losses []time.Time, t time.Time) int {
	n := 0
	for _, l := range losses {
		if l.Before(t) {
			n++
		}
	}
	return n
}

// lossSkips lists the slots the store recorded skipped for a loss of data,
// or as due before it began to record their job: none is owed when the
// jobs run after a loss.
func (s *session) lossSkips() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, vs := range s.markers {
		for _, m := range vs {
			// The store's reason, and the engine's for a run whose marker went.
			lost := m.Reason == slotstore.ReasonDataLoss || strings.HasPrefix(m.Reason, "data loss: ")
			if m.State == slotstore.StateSkipped && (lost || m.Reason == reasonNewJob) {
				out = append(out, fmt.Sprintf("%s skipped (%s) by %s", k, m.Reason, m.Holder))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
