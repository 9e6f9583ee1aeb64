package rules

import (
	"sort"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// The catalog's bounds (slotstore's package documentation, The catalog).
const (
	// MaxPast is how many specs in force before the current one an entry
	// keeps, newest first.
	MaxPast = 32
	// MaxCarriers is how many carriers of the spec in force an entry
	// keeps, the most recent.
	MaxCarriers = 32
	// MaxSpecBody bounds Spec.Body.
	MaxSpecBody = 16 << 10
	// maxFingerprint bounds Spec.Fingerprint.
	maxFingerprint = 128
	// DefaultCatalogLimit and MaxCatalogLimit bound a Catalog page.
	DefaultCatalogLimit = 100
	MaxCatalogLimit     = 10000
)

// NormalizeEnroll validates an Enroll request: its jobs (NormalizeJobs)
// and, when it has specs, one valid spec per job and a replica name.
func NormalizeEnroll(p slotstore.EnrollParams) ([]string, error) {
	jobs, err := NormalizeJobs(p)
	if err != nil || p.Specs == nil {
		return jobs, err
	}
	if len(p.Specs) != len(jobs) {
		return nil, invalid("enroll: %d specs for %d jobs", len(p.Specs), len(jobs))
	}
	if p.Replica == "" || len(p.Replica) > 200 || !isText(p.Replica) {
		return nil, invalid("enroll: a replica name of 1 to 200 bytes of text is required with specs")
	}
	for i, s := range p.Specs {
		if err := validateSpec(jobs[i], s); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

func validateSpec(job string, s slotstore.Spec) error {
	if !printable(s.Fingerprint, maxFingerprint) {
		return invalid("enroll %s: fingerprint %q: 1 to %d bytes of printable ASCII", job, s.Fingerprint, maxFingerprint)
	}
	if s.Supersedes != "" && !printable(s.Supersedes, maxFingerprint) {
		return invalid("enroll %s: supersedes %q: up to %d bytes of printable ASCII", job, s.Supersedes, maxFingerprint)
	}
	if len(s.Body) > MaxSpecBody {
		return invalid("enroll %s: spec body of %d bytes (at most %d)", job, len(s.Body), MaxSpecBody)
	}
	if s.Revision < 0 {
		return invalid("enroll %s: revision %d is negative", job, s.Revision)
	}
	return nil
}

// printable reports whether s is 1 to max bytes of printable ASCII.
func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// NormalizeCatalog validates a Catalog request and defaults its limit.
func NormalizeCatalog(p slotstore.CatalogParams) (slotstore.CatalogParams, error) {
	if p.Limit < 0 || p.Limit > MaxCatalogLimit {
		return p, invalid("catalog: limit %d (1 to %d, or 0 for %d)", p.Limit, MaxCatalogLimit, DefaultCatalogLimit)
	}
	if p.Limit == 0 {
		p.Limit = DefaultCatalogLimit
	}
	for _, j := range p.Jobs {
		if j == "" {
			return p, invalid("catalog: empty job")
		}
	}
	return p, nil
}

// Offer applies the enrolment of spec s of a job by replica at the store's
// time now to the job's entry cur (nil when the job has none), and returns
// the entry after it. took reports whether s took force (it was not in
// force before). The rule is The catalog's in slotstore's package
// documentation.
func Offer(cur *slotstore.CatalogEntry, job string, s slotstore.Spec, replica string, now time.Time) (e slotstore.CatalogEntry, took bool) {
	rec := slotstore.SpecRecord{Fingerprint: s.Fingerprint, Body: s.Body, Revision: s.Revision, Replica: replica, Since: now}
	if cur != nil && cur.Run != "" {
		if !cur.Deleted {
			return *cur, false // a live schedule held as data: enrolments never change it
		}
		c := *cur // a deleted schedule: its name is free for the configuration's job
		c.Run, c.Deleted, c.Carriers = "", false, nil
		cur = &c
	}
	if cur == nil || cur.InForce.Fingerprint == "" {
		var past []slotstore.SpecRecord
		if cur != nil {
			past = cur.Past
		}
		return slotstore.CatalogEntry{Job: job, InForce: rec, Carriers: map[string]time.Time{replica: now}, Past: past}, true
	}
	e = *cur
	if e.InForce.Fingerprint == s.Fingerprint {
		e.InForce.Revision = max(e.InForce.Revision, s.Revision)
		e.Carriers = carry(e.Carriers, replica, now)
		return e, false
	}
	if _, ok := e.Carriers[replica]; ok {
		// The replica now carries another spec: it no longer carries this
		// one (a replica name a restart reuses, as a StatefulSet's).
		e.Carriers = carry(e.Carriers, replica, time.Time{})
	}
	if !Takes(e, s) {
		return e, false
	}
	old := e.InForce
	old.Until = now
	e.Past = append([]slotstore.SpecRecord{old}, e.Past...)
	if len(e.Past) > MaxPast {
		e.Past = e.Past[:MaxPast]
	}
	e.InForce = rec
	e.Carriers = map[string]time.Time{replica: now}
	return e, true
}

// Takes reports whether an enrolment of s, another spec than e's spec in
// force, puts s in force.
func Takes(e slotstore.CatalogEntry, s slotstore.Spec) bool {
	f := e.InForce
	switch {
	case s.Supersedes == f.Fingerprint, len(e.Carriers) == 0:
		return true
	case s.Revision > 0 && f.Revision > 0:
		return s.Revision > f.Revision
	}
	for _, p := range e.Past {
		if p.Fingerprint == s.Fingerprint {
			return false
		}
	}
	return true
}

// carry records replica as a carrier at now, or removes it when now is
// zero, keeping the MaxCarriers most recent (ties broken by name, so every
// store keeps the same ones).
func carry(c map[string]time.Time, replica string, now time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(c)+1)
	for r, at := range c {
		out[r] = at
	}
	out[replica] = now
	if now.IsZero() {
		delete(out, replica)
	}
	if len(out) <= MaxCarriers {
		return out
	}
	names := make([]string, 0, len(out))
	for r := range out {
		names = append(names, r)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := out[names[i]], out[names[j]]
		if !a.Equal(b) {
			return a.After(b)
		}
		return names[i] < names[j]
	})
	for _, r := range names[MaxCarriers:] {
		delete(out, r)
	}
	return out
}

// SpecAllows reports whether a request naming spec (empty for none) may
// act on a job whose spec in force is inForce (empty for none).
func SpecAllows(inForce, spec string) bool {
	return spec == "" || inForce == "" || spec == inForce
}

// Superseded is the answer to a request a spec check refused.
func Superseded(job string, slot time.Time) slotstore.ClaimResult {
	return slotstore.ClaimResult{Status: slotstore.Superseded, Marker: slotstore.Marker{Job: job, Slot: slot}}
}

// SpecJSON and EntryJSON are a catalog entry as the stores that keep it as
// JSON write it: times in Unix milliseconds, the body as base64.
type SpecJSON struct {
	Fingerprint string `json:"fp"`
	Body        []byte `json:"body,omitempty"`
	Revision    int64  `json:"rev,omitempty"`
	Replica     string `json:"replica"`
	Since       int64  `json:"since"`
	Until       int64  `json:"until,omitempty"`
}

// EntryJSON: see SpecJSON.
type EntryJSON struct {
	InForce  SpecJSON         `json:"in_force"`
	Carriers map[string]int64 `json:"carriers,omitempty"`
	Past     []SpecJSON       `json:"past,omitempty"`
	// Run, Version, Seq and Deleted are a schedule held as data's.
	Run     string `json:"run,omitempty"`
	Version int64  `json:"version,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// ToJSON returns e as EntryJSON.
func ToJSON(e slotstore.CatalogEntry) EntryJSON {
	out := EntryJSON{InForce: specJSON(e.InForce), Carriers: make(map[string]int64, len(e.Carriers)), Run: e.Run,
		Version: e.Version, Seq: e.Seq, Deleted: e.Deleted}
	for r, at := range e.Carriers {
		out.Carriers[r] = at.UnixMilli()
	}
	for _, p := range e.Past {
		out.Past = append(out.Past, specJSON(p))
	}
	return out
}

// FromJSON returns the entry of job that j records.
func FromJSON(job string, j EntryJSON) slotstore.CatalogEntry {
	e := slotstore.CatalogEntry{Job: job, InForce: specRecord(j.InForce), Carriers: make(map[string]time.Time, len(j.Carriers)),
		Run: j.Run, Version: j.Version, Seq: j.Seq, Deleted: j.Deleted}
	for r, at := range j.Carriers {
		e.Carriers[r] = time.UnixMilli(at).UTC()
	}
	for _, p := range j.Past {
		e.Past = append(e.Past, specRecord(p))
	}
	return e
}

func specJSON(r slotstore.SpecRecord) SpecJSON {
	s := SpecJSON{Fingerprint: r.Fingerprint, Body: r.Body, Revision: r.Revision, Replica: r.Replica, Since: r.Since.UnixMilli()}
	if !r.Until.IsZero() {
		s.Until = r.Until.UnixMilli()
	}
	return s
}

func specRecord(s SpecJSON) slotstore.SpecRecord {
	r := slotstore.SpecRecord{Fingerprint: s.Fingerprint, Body: s.Body, Revision: s.Revision, Replica: s.Replica, Since: time.UnixMilli(s.Since).UTC()}
	if s.Until != 0 {
		r.Until = time.UnixMilli(s.Until).UTC()
	}
	return r
}
