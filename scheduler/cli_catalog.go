package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// errFound: a command whose exit 1 says what it found (diff: changes;
// audit: unaccounted slots) found it, and has printed it.
var errFound = errors.New("found")

// checkError is a failure of a command whose exit 1 says what it found
// (diff, audit): it exits 2, so that a check in CI tells the two apart.
type checkError struct{ err error }

func (e checkError) Error() string { return e.err.Error() }
func (e checkError) Unwrap() error { return e.err }

// asCheck makes err, unless nil or a usage or configuration error (exit 2
// already), a checkError.
func asCheck(err error) error {
	if err == nil || errors.Is(err, errUsage) || IsConfigError(err) || errors.Is(err, errFound) {
		return err
	}
	return checkError{err}
}

// catalogView is what diff, jobs and audit read: the configuration file's
// jobs with the specs its replicas would enroll, and the store's catalog.
type catalogView struct {
	path     string
	replica  string // the name the file's replica enrolls under
	revision int64
	jobs     []engine.JobSpec // the file's, in its order
	specs    map[string]slotstore.Spec
	st       slotstore.Store
	entries  []slotstore.CatalogEntry // sorted by job
	byJob    map[string]slotstore.CatalogEntry
}

// openCatalog loads and validates the configuration at path, opens its
// store and reads the catalog's entries of only, or with none the whole
// catalog. The caller closes v.st.
func openCatalog(ctx context.Context, path string, reg *jobs.Registry, stderr io.Writer, only ...string) (*catalogView, error) {
	cfg, err := loadConfig(ctx, path, reg)
	if err != nil {
		return nil, err
	}
	v := &catalogView{path: path, replica: cfg.replicaName(), specs: map[string]slotstore.Spec{}, byJob: map[string]slotstore.CatalogEntry{}}
	if v.revision, err = cfg.revision(); err != nil {
		return nil, usageError{msg: fmt.Sprintf("%s: %v", path, err)}
	}
	if v.jobs, _, err = cfg.resolveContext(ctx, reg); err != nil {
		return nil, err
	}
	for _, j := range v.jobs {
		v.specs[j.Name] = engine.SpecOf(j, v.revision)
	}
	if v.st, err = backend.OpenLogged(ctx, cfg.backendConfig(), newLogger(cfg.Log, stderr)); err != nil {
		return nil, fmt.Errorf("open the store of %s: %w", path, err)
	}
	if v.entries, err = readCatalog(ctx, v.st, only); err != nil {
		v.st.Close()
		return nil, err
	}
	for _, en := range v.entries {
		v.byJob[en.Job] = en
	}
	return v, nil
}

// catalogPage is how many entries readCatalog asks for at a time.
const catalogPage = 1000

// readCatalog reads the entries of st's catalog of jobs, or with none every
// entry, sorted by job.
func readCatalog(ctx context.Context, st slotstore.Store, jobs []string) ([]slotstore.CatalogEntry, error) {
	if len(jobs) > 0 {
		es, err := st.Catalog(ctx, slotstore.CatalogParams{Jobs: jobs})
		if err != nil {
			return nil, fmt.Errorf("read the catalog: %w", err)
		}
		return es, nil
	}
	var out []slotstore.CatalogEntry
	after := ""
	for {
		es, err := st.Catalog(ctx, slotstore.CatalogParams{After: after, Limit: catalogPage})
		if err != nil {
			return nil, fmt.Errorf("read the catalog: %w", err)
		}
		out = append(out, es...)
		if len(es) < catalogPage {
			return out, nil
		}
		after = es[len(es)-1].Job
	}
}

// inForce returns job's spec in force and its body; ok is false for a job
// the catalog does not have, has no spec in force for, or whose spec in
// force retired it: a job the catalog counts as absent.
func (v *catalogView) inForce(job string) (rec slotstore.SpecRecord, body specView, ok bool) {
	en, found := v.byJob[job]
	if !found || en.InForce.Fingerprint == "" {
		return rec, body, false
	}
	body = viewOf(en.InForce.Body)
	return en.InForce, body, !body.Retired
}

// specView is a spec body as the CLI reads it: Known is false for one this
// build cannot read (written by another build).
type specView struct {
	engine.SpecBody
	Known bool
}

func viewOf(body []byte) specView {
	b, ok := engine.ParseBody(body)
	return specView{SpecBody: b, Known: ok}
}

// nextSlots returns the n slots of b's schedule after now; none for a
// body this build cannot read or whose schedule it cannot parse.
func nextSlots(b specView, now time.Time, n int) []time.Time {
	if !b.Known || b.Retired {
		return nil
	}
	sched, err := b.Slots()
	if err != nil {
		return nil
	}
	return slotsAfter(sched, now, n)
}

// slotsAfter returns the n slots of sched after now.
func slotsAfter(sched *schedule.Schedule, now time.Time, n int) []time.Time {
	out := []time.Time{}
	for t := sched.Next(now); !t.IsZero() && len(out) < n; t = sched.Next(t) {
		out = append(out, t.UTC())
	}
	return out
}

// shortSpec is a fingerprint as tables print it: "v1:" and 8 hex digits.
func shortSpec(fp string) string {
	if len(fp) > 11 {
		return fp[:11]
	}
	return fp
}

// rfc3339s formats ts in UTC, RFC 3339.
func rfc3339s(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}

// stamp formats t in UTC, RFC 3339; "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// parseWhenAt is parseWhen, and besides "now" and a negative duration
// ("-2h", "-90m"): that long before now.
func parseWhenAt(s string, loc *time.Location, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("a time before now is a negative duration, such as -2h or -90m: %v", err)
		}
		return now.Add(d), nil
	}
	t, err := parseWhen(s, loc)
	if err != nil {
		return t, fmt.Errorf("%v, now, or a negative duration such as -2h", err)
	}
	return t, nil
}
