// The audit: every nominal slot of a job in a window, under the spec in
// force at its time as the store's catalog records it, with its fate —
// what its marker says, or unaccounted when it has none.

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/slotstore"
)

// MaxAuditSlots bounds the nominal slots one audit lists.
const MaxAuditSlots = 10000

// Fates of an audited slot that has no marker.
const (
	// FateUnaccounted: the slot's window has closed and no replica
	// recorded it: not run, and not recorded missed either.
	FateUnaccounted = "unaccounted"
	// FatePending: the slot is not due yet, or its starting window is still
	// open.
	FatePending = "pending"
	// FateBeyondHistory: older than the history the job's markers are kept
	// for: it may have run and had its marker pruned.
	FateBeyondHistory = "beyond history"
	// FateBeforeRecord: older than the catalog's record of the job (the
	// oldest spec it keeps took force after it): the job may not have
	// existed then, or ran under a build that kept no catalog.
	FateBeforeRecord = "before record"
)

// AuditSlot is one slot of an audit.
type AuditSlot struct {
	Slot time.Time
	// Spec is the fingerprint of the spec in force at the slot's time;
	// empty for a slot that is not one of a spec's (a manual trigger's).
	Spec string
	// Fate is the marker's state (done, skipped, running...) or, with none,
	// one of the Fate constants.
	Fate string
	// Marker is the slot's marker; nil for none.
	Marker *slotstore.Marker
}

// Audit is the audit of one job over [From, To].
type Audit struct {
	Job      string
	From, To time.Time
	Slots    []AuditSlot // oldest first
	// Counts counts Slots by fate.
	Counts map[string]int
	// HistoryFrom is how far back markers are kept under the newest spec
	// that keeps them (the one in force, unless the job is retired): a
	// slot of that spec older than it with no marker is FateBeyondHistory.
	// A slot of an older spec is judged by that spec's own history.
	HistoryFrom time.Time
	// Listed is where the listing starts: From, or, when the window held
	// more than MaxAuditSlots slots (Truncated), the first of the newest
	// MaxAuditSlots. Slots and Counts cover [Listed, To].
	Listed    time.Time
	Truncated bool
}

// ErrBadWindow: an audit's window ends before it starts, or starts before
// 1970-01-01.
var ErrBadWindow = errors.New("scheduler: bad audit window")

// ErrNotInCatalog: the catalog has no entry for the job (no replica of a
// build that keeps one has enrolled it).
var ErrNotInCatalog = errors.New("scheduler: job not in the catalog")

// ErrSpecUnreadable: a spec the catalog keeps for the job is one this
// build cannot read (a newer build's body, or a schedule it cannot parse);
// the store answered, so it is no failure of the store's.
var ErrSpecUnreadable = errors.New("scheduler: a spec in the catalog is unreadable by this build")

// unreadable is an error of ErrSpecUnreadable with its own message.
type unreadable struct{ error }

func (u unreadable) Is(target error) bool { return target == ErrSpecUnreadable }

// specPeriod is a spec of a job and when it was in force.
type specPeriod struct {
	rec   slotstore.SpecRecord
	body  SpecBody
	sched *schedule.Schedule
	// oldest marks the oldest spec the catalog keeps, which stands for the
	// time before it too.
	oldest bool
}

// AuditJob audits job over [from, to] at now (this process's clock) on st.
func AuditJob(ctx context.Context, st slotstore.Store, job string, from, to, now time.Time) (Audit, error) {
	if _, err := newAudit(job, from, to); err != nil {
		return Audit{Job: job}, err
	}
	es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{job}})
	if err != nil {
		return Audit{Job: job}, fmt.Errorf("audit %s: read the catalog: %w", job, err)
	}
	en := slotstore.CatalogEntry{Job: job}
	if len(es) > 0 {
		en = es[0]
	}
	return AuditEntry(ctx, st, en, from, to, now)
}

// AuditEntry is AuditJob for a job whose catalog entry, en, the caller has
// read already.
func AuditEntry(ctx context.Context, st slotstore.Store, en slotstore.CatalogEntry, from, to, now time.Time) (Audit, error) {
	a, err := newAudit(en.Job, from, to)
	if err != nil {
		return a, err
	}
	if en.InForce.Fingerprint == "" {
		return a, fmt.Errorf("%w: %s (no replica has enrolled it with its spec yet)", ErrNotInCatalog, en.Job)
	}
	return audit(ctx, st, a, en, now)
}

// newAudit is the audit of job over [from, to] in whole seconds, or
// ErrBadWindow.
func newAudit(job string, from, to time.Time) (Audit, error) {
	a := Audit{Job: job, From: from.UTC().Truncate(time.Second), To: to.UTC().Truncate(time.Second), Counts: map[string]int{}}
	if a.From.Before(time.Unix(0, 0)) {
		return a, fmt.Errorf("%w: audit %s: from %s is before 1970-01-01", ErrBadWindow, job, a.From.Format(time.RFC3339))
	}
	if a.To.Before(a.From) {
		return a, fmt.Errorf("%w: audit %s: to %s is before from %s", ErrBadWindow, job, a.To.Format(time.RFC3339), a.From.Format(time.RFC3339))
	}
	return a, nil
}

// audit fills a, whose job's catalog entry is en.
func audit(ctx context.Context, st slotstore.Store, a Audit, en slotstore.CatalogEntry, now time.Time) (Audit, error) {
	periods, err := specPeriods(en)
	if err != nil {
		return a, err
	}
	for _, p := range periods { // the newest spec that keeps markers: a retired one keeps none
		if a.HistoryFrom = historyFrom(p, now); !a.HistoryFrom.IsZero() {
			break
		}
	}
	slices.Reverse(periods) // oldest first, as the slots are listed
	a.Listed = a.From
	if countSlots(periods, a.From, a.To, MaxAuditSlots+1) > MaxAuditSlots {
		a.Truncated, a.Listed = true, newestStart(periods, a.From, a.To)
	}
	markers, err := markersFrom(ctx, st, a.Job, a.Listed, a.To)
	if err != nil {
		return a, err
	}
	nominal := make(map[int64]bool)
	eachSlot(periods, a.Listed, a.To, func(s time.Time, p *specPeriod) bool {
		nominal[s.Unix()] = true
		a.Slots = append(a.Slots, auditSlot(s, *p, markers, historyFrom(*p, now), now))
		return true
	})
	for k, m := range markers {
		if !nominal[k] {
			m := m
			a.Slots = append(a.Slots, AuditSlot{Slot: m.Slot, Fate: string(m.State), Marker: &m})
		}
	}
	sort.Slice(a.Slots, func(i, j int) bool { return a.Slots[i].Slot.Before(a.Slots[j].Slot) })
	for _, s := range a.Slots {
		a.Counts[s.Fate]++
	}
	return a, nil
}

// historyFrom is how far back, at now, markers are kept under spec period
// p: its own history, less clockMargin as catch-up counts it; zero for a
// retired spec, which keeps none.
func historyFrom(p specPeriod, now time.Time) time.Time {
	h, err := time.ParseDuration(p.body.History)
	if err != nil || p.body.Retired {
		return time.Time{}
	}
	return now.Add(-h + clockMargin).UTC().Truncate(time.Second)
}

// eachSlot calls fn with each nominal slot in [lo, hi], oldest first, with
// the spec period (of periods, oldest first) in force at it, until fn
// returns false. A period's slots start at its first whole second: Since
// is in milliseconds, and the slot of a second it began within is its
// predecessor's.
func eachSlot(periods []specPeriod, lo, hi time.Time, fn func(time.Time, *specPeriod) bool) {
	for i := range periods {
		p := &periods[i]
		from, to := lo, hi
		if !p.oldest && p.rec.Since.After(from) { // the oldest spec known stands for the time before it too
			from = p.rec.Since.Truncate(time.Second)
			if from.Before(p.rec.Since) {
				from = from.Add(time.Second)
			}
		}
		if !p.rec.Until.IsZero() && !p.rec.Until.After(to) {
			to = p.rec.Until.Add(-time.Nanosecond)
		}
		if p.body.Retired || to.Before(from) {
			continue // removed: no slot was the job's
		}
		for s := p.sched.Next(from.Add(-time.Second)); !s.IsZero() && !s.After(to); s = p.sched.Next(s) {
			if !fn(s, p) {
				return
			}
		}
	}
}

// countSlots counts the nominal slots in [lo, hi], up to limit.
func countSlots(periods []specPeriod, lo, hi time.Time, limit int) int {
	n := 0
	eachSlot(periods, lo, hi, func(time.Time, *specPeriod) bool {
		n++
		return n < limit
	})
	return n
}

// newestStart returns the latest whole second t of [lo, hi] from which
// [t, hi] holds no more than MaxAuditSlots slots (given that [lo, hi] holds
// more): a binary search, each step counting at most MaxAuditSlots+1
// slots, so a window of any length costs a few hundred thousand steps of
// the schedule at most.
func newestStart(periods []specPeriod, lo, hi time.Time) time.Time {
	bad, good := lo, hi.Add(time.Second) // [bad, hi] holds too many; [good, hi] does not
	for good.Sub(bad) > time.Second {
		mid := bad.Add(good.Sub(bad) / 2).Truncate(time.Second)
		if countSlots(periods, mid, hi, MaxAuditSlots+1) > MaxAuditSlots {
			bad = mid
		} else {
			good = mid
		}
	}
	return good
}

// auditSlot is the fate of slot s of spec period p.
func auditSlot(s time.Time, p specPeriod, markers map[int64]slotstore.Marker, historyFrom, now time.Time) AuditSlot {
	out := AuditSlot{Slot: s, Spec: p.rec.Fingerprint}
	if m, ok := markers[s.Unix()]; ok {
		out.Fate, out.Marker = string(m.State), &m
		return out
	}
	jitter, _ := time.ParseDuration(p.body.Jitter)
	deadline, _ := time.ParseDuration(p.body.StartingDeadline)
	switch {
	case p.oldest && s.Before(p.rec.Since):
		out.Fate = FateBeforeRecord
	case !historyFrom.IsZero() && s.Before(historyFrom):
		out.Fate = FateBeyondHistory
	case now.Before(s.Add(jitter + deadline + clockMargin)):
		out.Fate = FatePending
	default:
		out.Fate = FateUnaccounted
	}
	return out
}

// specPeriods returns job's specs, the one in force first, then the past
// ones newest first, each with its parsed schedule; a spec whose body this
// build cannot read is an error.
func specPeriods(en slotstore.CatalogEntry) ([]specPeriod, error) {
	job := en.Job
	recs := append([]slotstore.SpecRecord{en.InForce}, en.Past...)
	out := make([]specPeriod, 0, len(recs))
	for _, r := range recs {
		if r.Fingerprint == slotstore.DeletedFingerprint { // a deleted schedule's: no slot
			out = append(out, specPeriod{rec: r, body: SpecBody{Retired: true}})
			continue
		}
		b, ok := ParseBody(r.Body)
		if !ok {
			return nil, unreadable{fmt.Errorf("audit %s: spec %s (by %s) was written by a build this one cannot read", job, r.Fingerprint, r.Replica)}
		}
		if b.Retired {
			out = append(out, specPeriod{rec: r, body: b})
			continue
		}
		sched, err := b.Slots()
		if err != nil {
			return nil, unreadable{fmt.Errorf("audit %s: spec %s: %w", job, r.Fingerprint, err)}
		}
		out = append(out, specPeriod{rec: r, body: b, sched: sched})
	}
	out[len(out)-1].oldest = true
	return out, nil
}
