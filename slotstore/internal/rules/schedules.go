package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// The bounds of schedules held as data.
const (
	// maxScheduleName bounds a schedule's ID and the job it runs.
	maxScheduleName = 200
	// DefaultChangesLimit and MaxChangesLimit bound a ScheduleChanges page.
	DefaultChangesLimit = 1000
	MaxChangesLimit     = 10000
)

// NormalizeWrites validates a WriteSchedules request: every write is
// checked before any is applied, so an invalid batch changes nothing.
func NormalizeWrites(p slotstore.WriteSchedulesParams) error {
	if p.By == "" || len(p.By) > 200 || !isText(p.By) {
		return invalid("write schedules: a writer name (By) of 1 to 200 bytes of text is required")
	}
	if len(p.Writes) == 0 || len(p.Writes) > slotstore.MaxScheduleWrites {
		return invalid("write schedules: %d writes (1 to %d)", len(p.Writes), slotstore.MaxScheduleWrites)
	}
	for _, w := range p.Writes {
		if err := validateWrite(w); err != nil {
			return err
		}
	}
	return nil
}

func validateWrite(w slotstore.ScheduleWrite) error {
	if !printable(w.ID, maxScheduleName) {
		return invalid("write schedule %q: id: 1 to %d bytes of printable ASCII", w.ID, maxScheduleName)
	}
	if w.IfVersion < slotstore.AnyVersion {
		return invalid("write schedule %s: if_version %d (%d for any, 0 for none, or a version)", w.ID, w.IfVersion, slotstore.AnyVersion)
	}
	if w.Delete {
		if w.Run != "" || w.Spec.Fingerprint != "" || w.Spec.Body != nil {
			return invalid("write schedule %s: a delete carries no run or spec", w.ID)
		}
		return nil
	}
	if !printable(w.Run, maxScheduleName) {
		return invalid("write schedule %s: run %q: 1 to %d bytes of printable ASCII", w.ID, w.Run, maxScheduleName)
	}
	if w.Spec.Revision != 0 || w.Spec.Supersedes != "" {
		return invalid("write schedule %s: a schedule's spec has no revision or supersedes", w.ID)
	}
	if w.Spec.Fingerprint == slotstore.DeletedFingerprint {
		return invalid("write schedule %s: fingerprint %q is the deleted one", w.ID, w.Spec.Fingerprint)
	}
	return validateSpec(w.ID, w.Spec)
}

// NormalizeSchedules validates a Schedules request and defaults its limit.
func NormalizeSchedules(p slotstore.ScheduleParams) (slotstore.ScheduleParams, error) {
	if p.Limit < 0 || p.Limit > MaxCatalogLimit {
		return p, invalid("schedules: limit %d (1 to %d, or 0 for %d)", p.Limit, MaxCatalogLimit, DefaultCatalogLimit)
	}
	if p.Limit == 0 {
		p.Limit = DefaultCatalogLimit
	}
	for _, id := range p.IDs {
		if id == "" {
			return p, invalid("schedules: empty id")
		}
	}
	return p, nil
}

// IDs returns the IDs of p, a Schedules request that names them, that
// sort after p.After: sorted, each once. The entries to read are theirs.
func IDs(p slotstore.ScheduleParams) []string {
	ids := slices.DeleteFunc(slices.Clone(p.IDs), func(id string) bool { return id <= p.After })
	slices.Sort(ids)
	return slices.Compact(ids)
}

// NormalizeChanges validates a ScheduleChanges request and defaults its
// limit.
func NormalizeChanges(p slotstore.ChangesParams) (slotstore.ChangesParams, error) {
	if p.After < 0 {
		return p, invalid("schedule changes: after %d is negative", p.After)
	}
	if p.Limit < 0 || p.Limit > MaxChangesLimit {
		return p, invalid("schedule changes: limit %d (1 to %d, or 0 for %d)", p.Limit, MaxChangesLimit, DefaultChangesLimit)
	}
	if p.Limit == 0 {
		p.Limit = DefaultChangesLimit
	}
	return p, nil
}

// Listed reports whether e is a live schedule p selects (but for p.IDs,
// After and Limit, which the caller applies).
func Listed(e slotstore.CatalogEntry, p slotstore.ScheduleParams) bool {
	return e.Run != "" && !e.Deleted && (p.Run == "" || e.Run == p.Run) && strings.HasPrefix(e.Job, p.Prefix)
}

// WriteOutcome is what ApplyWrite decided.
type WriteOutcome int

const (
	// Unchanged: nothing to write (an idempotent put, or a refused write:
	// see the result's Err).
	Unchanged WriteOutcome = iota
	// Changed: the entry must be written, with the next sequence number.
	Changed
)

// ApplyWrite applies write w by by at the store's time now to the job's
// entry cur (nil when the job has none). When it returns Changed, e is the
// entry to store, its Seq still to set by the caller (the store's next
// sequence number), and the caller also begins the job's generation if it
// has none. Otherwise e is cur (zero when nil) and err says why, or is nil
// for an idempotent put. The rule is Schedules held as data in slotstore's
// package documentation.
func ApplyWrite(cur *slotstore.CatalogEntry, w slotstore.ScheduleWrite, by string, now time.Time) (e slotstore.CatalogEntry, out WriteOutcome, err error) {
	var c slotstore.CatalogEntry
	if cur != nil {
		c = *cur
	}
	live := c.Run != "" && !c.Deleted
	switch {
	case c.Run == "" && c.InForce.Fingerprint != "":
		return c, Unchanged, fmt.Errorf("%w: %s", slotstore.ErrNotSchedule, w.ID)
	case !w.Delete && live && c.Run == w.Run && c.InForce.Fingerprint == w.Spec.Fingerprint:
		return c, Unchanged, nil
	case w.Delete && !live:
		return c, Unchanged, fmt.Errorf("%w: %s", slotstore.ErrNoSchedule, w.ID)
	case w.IfVersion != slotstore.AnyVersion && w.IfVersion != versionOf(c):
		return c, Unchanged, fmt.Errorf("%w: %s is at version %d, not %d", slotstore.ErrVersionMismatch, w.ID, versionOf(c), w.IfVersion)
	}
	rec := slotstore.SpecRecord{Fingerprint: w.Spec.Fingerprint, Body: w.Spec.Body, Replica: by, Since: now}
	e = slotstore.CatalogEntry{Job: w.ID, InForce: rec, Carriers: map[string]time.Time{}, Past: c.Past, Run: w.Run,
		Version: c.Version + 1}
	if w.Delete {
		e.InForce = slotstore.SpecRecord{Fingerprint: slotstore.DeletedFingerprint, Replica: by, Since: now}
		e.Run, e.Deleted = c.Run, true
	}
	if c.InForce.Fingerprint != "" {
		old := c.InForce
		old.Until = now
		e.Past = append([]slotstore.SpecRecord{old}, c.Past...)
		if len(e.Past) > MaxPast {
			e.Past = e.Past[:MaxPast]
		}
	}
	return e, Changed, nil
}

// versionOf is the version a write's IfVersion is checked against: 0 for
// no schedule or a deleted one.
func versionOf(c slotstore.CatalogEntry) int64 {
	if c.Run == "" || c.Deleted {
		return 0
	}
	return c.Version
}
