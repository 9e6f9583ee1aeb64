// The audit: every nominal slot of a job in a window, under the spec in
// force at its time as the store's catalog records it, with its fate —
// what its marker says, or unaccounted when it has none.

package engine

import (
	"context"
	"errors"
	"fmt"
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
	// HistoryFrom is how far back markers are kept under the spec in force
	// (its history): a slot older than it with no marker is FateBeyondHistory.
	HistoryFrom time.Time
	// Truncated is set when the window held more than MaxAuditSlots slots:
	// Slots lists the first.
	Truncated bool
}

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
	a := Audit{Job: job, From: from.UTC().Truncate(time.Second), To: to.UTC().Truncate(time.Second), Counts: map[string]int{}}
	if a.To.Before(a.From) {
		return a, fmt.Errorf("audit %s: --to %s is before --from %s", job, a.To.Format(time.RFC3339), a.From.Format(time.RFC3339))
	}
	es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: []string{job}})
	if err != nil {
		return a, fmt.Errorf("audit %s: read the catalog: %w", job, err)
	}
	if len(es) == 0 || es[0].InForce.Fingerprint == "" {
		return a, fmt.Errorf("%w: %s (no replica has enrolled it with its spec yet)", ErrNotInCatalog, job)
	}
	return audit(ctx, st, a, es[0], now)
}

// audit fills a, whose job's catalog entry is en.
func audit(ctx context.Context, st slotstore.Store, a Audit, en slotstore.CatalogEntry, now time.Time) (Audit, error) {
	job := a.Job
	periods, err := specPeriods(en)
	if err != nil {
		return a, err
	}
	if h, err := time.ParseDuration(periods[0].body.History); err == nil && !periods[0].body.Retired {
		a.HistoryFrom = now.Add(-h).UTC().Truncate(time.Second)
	}
	markers, err := markersFrom(ctx, st, job, a.From, a.To)
	if err != nil {
		return a, err
	}
	nominal := make(map[int64]bool)
	for i, p := range periods {
		lo, hi := a.From, a.To // the period's part of the window, hi included
		if i < len(periods)-1 && p.rec.Since.After(lo) {
			lo = p.rec.Since // the oldest spec known stands for the time before too
		}
		if !p.rec.Until.IsZero() && !p.rec.Until.After(hi) {
			hi = p.rec.Until.Add(-time.Nanosecond)
		}
		if p.body.Retired {
			continue // removed: no slot was the job's
		}
		for s := p.sched.Next(lo.Add(-time.Second)); !s.IsZero() && !s.After(hi); s = p.sched.Next(s) {
			if len(nominal) == MaxAuditSlots {
				a.Truncated = true
				break
			}
			nominal[s.Unix()] = true
			a.Slots = append(a.Slots, auditSlot(s, p, markers, a.HistoryFrom, now))
		}
	}
	for k, m := range markers {
		if !nominal[k] && !a.Truncated {
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
		b, ok := ParseBody(r.Body)
		if !ok {
			return nil, unreadable{fmt.Errorf("audit %s: spec %s (by %s) was written by a build this one cannot read", job, r.Fingerprint, r.Replica)}
		}
		if b.Retired {
			out = append(out, specPeriod{rec: r, body: b})
			continue
		}
		sched, err := schedule.Parse(b.Schedule, b.Zone)
		if err != nil {
			return nil, unreadable{fmt.Errorf("audit %s: spec %s: %w", job, r.Fingerprint, err)}
		}
		out = append(out, specPeriod{rec: r, body: b, sched: sched})
	}
	out[len(out)-1].oldest = true
	return out, nil
}
