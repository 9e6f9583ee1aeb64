package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// cmdAudit lists every nominal slot of a window with its fate. Exit 0 when
// none is unaccounted, 1 when some are, 2 on error.
func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("audit", stderr)
	setUsage(fs, "[--job JOB] --from T1 [--to T2]", `
Lists every slot from --from to --to of JOB, or of every job in the store's
catalog, under the spec in force at its time, with its fate: what its marker
says (done with its outcome, attempt, holder and fence, manual or backfill;
skipped with its reason; running...) or, with none, unaccounted (its window
closed and no replica recorded it), pending, beyond history (older than the
markers are kept) or before record. Then a summary: counts by fate, and where
history ends. T1 and T2 are RFC 3339, YYYY-MM-DD[THH:MM[:SS]] in UTC, now, or a
negative duration from now (-2h). A window of more than 10000 slots lists and
counts the newest 10000. Exit 0 when no slot is unaccounted, 1 when some are,
2 on error or when a window was cut so. --json prints one JSON document.
`+jobArg)
	job := fs.String("job", "", "only this `JOB`")
	from := fs.String("from", "", "the window's first `TIME` (required)")
	to := fs.String("to", "now", "the window's last `TIME`")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	now := time.Now()
	if *from == "" {
		return usageError{msg: "audit: --from is required (RFC 3339, or a negative duration such as -2h)"}
	}
	t1, err := parseWhenAt(*from, time.UTC, now)
	if err != nil {
		return usageError{msg: fmt.Sprintf("audit: --from %q: %v", *from, err)}
	}
	t2, err := parseWhenAt(*to, time.UTC, now)
	if err != nil {
		return usageError{msg: fmt.Sprintf("audit: --to %q: %v", *to, err)}
	}
	if t2.Before(t1) {
		return usageError{msg: fmt.Sprintf("audit: --to %s is before --from %s", stamp(t2), stamp(t1))}
	}
	if t1.Before(time.Unix(0, 0)) {
		return usageError{msg: fmt.Sprintf("audit: --from %s is before 1970-01-01", stamp(t1))}
	}
	var only []string // the whole catalog, or --job's entry alone
	if *job != "" {
		only = []string{*job}
	}
	v, err := openCatalog(ctx, *path, reg, stderr, only...)
	if err != nil {
		return err
	}
	defer v.st.Close()
	r, err := v.audit(ctx, *job, t1, t2, now)
	if err != nil {
		return err
	}
	if *asJSON {
		err = json.NewEncoder(stdout).Encode(r)
	} else {
		err = printAudit(stdout, r)
	}
	switch {
	case err != nil:
		return err
	case r.Unaccounted > 0:
		return errFound
	case r.Truncated > 0:
		return checkError{fmt.Errorf("audit: %s held more than %d slots: the slots before the listing were not audited; narrow --from", plural(r.Truncated, "job's window", "jobs' windows"), engine.MaxAuditSlots)}
	}
	return nil
}

// auditSlotJSON is an audited slot as --json prints it.
type auditSlotJSON struct {
	Slot     string `json:"slot"`
	Spec     string `json:"spec,omitempty"`
	Fate     string `json:"fate"`
	Outcome  string `json:"outcome,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Holder   string `json:"holder,omitempty"`
	Fence    int64  `json:"fence,omitempty"`
	Manual   bool   `json:"manual,omitempty"`
	Backfill bool   `json:"backfill,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
}

// auditWindow is a window audited and its slots counted by fate.
type auditWindow struct {
	From        string         `json:"from"`
	To          string         `json:"to"`
	Counts      map[string]int `json:"counts"`
	Unaccounted int            `json:"unaccounted"`
}

// auditJobJSON is one job's audit as --json prints it.
type auditJobJSON struct {
	Job string `json:"job"`
	auditWindow
	HistoryFrom string `json:"history_from,omitempty"`
	// Listed is where the listing starts: from, or with Truncated the
	// first of the newest engine.MaxAuditSlots slots.
	Listed    string          `json:"listed_from"`
	Truncated bool            `json:"truncated,omitempty"`
	Slots     []auditSlotJSON `json:"slots"`
}

// auditReport is what audit prints.
type auditReport struct {
	auditWindow
	Now  string         `json:"now"`
	Jobs []auditJobJSON `json:"jobs"`
	// Truncated counts the jobs whose window held too many slots to list.
	Truncated int `json:"truncated"`
	// NotInCatalog lists the file's jobs the catalog does not have, which
	// no audit can tell of yet.
	NotInCatalog []string `json:"not_in_catalog"`
}

// audit audits job, or every job of v's catalog, over [from, to] at now.
func (v *catalogView) audit(ctx context.Context, job string, from, to, now time.Time) (auditReport, error) {
	r := auditReport{auditWindow: auditWindow{From: stamp(from), To: stamp(to), Counts: map[string]int{}}, Now: stamp(now),
		Jobs: []auditJobJSON{}, NotInCatalog: []string{}}
	names := []string{job}
	if job == "" {
		names = names[:0]
		for _, en := range v.entries {
			if en.InForce.Fingerprint != "" {
				names = append(names, en.Job)
			}
		}
		for _, j := range v.jobs {
			if _, ok := v.byJob[j.Name]; !ok {
				r.NotInCatalog = append(r.NotInCatalog, j.Name)
			}
		}
	}
	for _, name := range names {
		en, ok := v.byJob[name]
		if !ok {
			en = slotstore.CatalogEntry{Job: name}
		}
		a, err := engine.AuditEntry(ctx, v.st, en, from, to, now)
		if errors.Is(err, engine.ErrNotInCatalog) {
			return r, usageError{msg: fmt.Sprintf("audit: --job %q: %v", name, v.notInCatalog(name))}
		}
		if errors.Is(err, engine.ErrBadWindow) {
			return r, usageError{msg: err.Error()}
		}
		if err != nil {
			return r, err
		}
		aj := auditJSON(a)
		for f, n := range a.Counts {
			r.Counts[f] += n
		}
		r.Unaccounted += aj.Unaccounted
		if a.Truncated {
			r.Truncated++
		}
		r.Jobs = append(r.Jobs, aj)
	}
	return r, nil
}

// notInCatalog says why job, which the catalog does not have, cannot be
// audited.
func (v *catalogView) notInCatalog(job string) string {
	if _, ok := v.specs[job]; ok {
		return fmt.Sprintf("the catalog of %s's store has no spec of it yet: no replica of a build that keeps one has enrolled it", v.path)
	}
	return fmt.Sprintf("no such job in the catalog of %s's store, nor in %s", v.path, v.path)
}

// auditJSON is a as --json prints it.
func auditJSON(a engine.Audit) auditJobJSON {
	out := auditJobJSON{Job: a.Job, auditWindow: auditWindow{From: stamp(a.From), To: stamp(a.To), Counts: a.Counts,
		Unaccounted: a.Counts[engine.FateUnaccounted]}, HistoryFrom: stamp(a.HistoryFrom), Listed: stamp(a.Listed), Truncated: a.Truncated, Slots: []auditSlotJSON{}}
	for _, s := range a.Slots {
		js := auditSlotJSON{Slot: stamp(s.Slot), Spec: s.Spec, Fate: s.Fate}
		if m := s.Marker; m != nil {
			js.Outcome, js.Attempt, js.Holder, js.Fence = string(m.Outcome), m.Attempt, m.Holder, m.Fence
			js.Manual, js.Backfill, js.Reason, js.Error = m.Manual, m.Backfill, m.Reason, m.Error
		}
		out.Slots = append(out.Slots, js)
	}
	return out
}

// printAudit prints r as a table, then a summary per job and in all.
func printAudit(w io.Writer, r auditReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSLOT (UTC)\tSPEC\tFATE\tDETAIL")
	for _, j := range r.Jobs {
		for _, s := range j.Slots {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Job, s.Slot, shortSpec(s.Spec), s.Fate, slotDetail(s))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, j := range r.Jobs {
		fmt.Fprintf(w, "%s: %s from %s to %s: %s\n", j.Job, plural(len(j.Slots), "slot", "slots"), j.From, j.To, countsLine(j.Counts))
		if j.HistoryFrom != "" && j.HistoryFrom > j.From {
			fmt.Fprintf(w, "%s: history is kept from %s: a slot before it with no marker is %q\n", j.Job, j.HistoryFrom, engine.FateBeyondHistory)
		}
		if j.Truncated {
			fmt.Fprintf(w, "%s: more than %d slots: only the newest, from %s, are listed and counted\n", j.Job, engine.MaxAuditSlots, j.Listed)
		}
	}
	for _, name := range r.NotInCatalog {
		fmt.Fprintf(w, "%s: not in the catalog yet (no replica has enrolled it): not audited\n", name)
	}
	fmt.Fprintf(w, "%s, %d unaccounted\n", plural(len(r.Jobs), "job", "jobs"), r.Unaccounted)
	return nil
}

// slotDetail is what a slot's row says besides its fate.
func slotDetail(s auditSlotJSON) string {
	var parts []string
	if s.Outcome != "" {
		parts = append(parts, s.Outcome)
	}
	if s.Attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", s.Attempt))
	}
	if s.Fence > 0 {
		parts = append(parts, fmt.Sprintf("fence %d", s.Fence))
	}
	if s.Holder != "" {
		parts = append(parts, "by "+s.Holder)
	}
	for _, flag := range []struct {
		on   bool
		name string
	}{{s.Manual, "manual"}, {s.Backfill, "backfill"}} {
		if flag.on {
			parts = append(parts, flag.name)
		}
	}
	if s.Reason != "" {
		parts = append(parts, s.Reason)
	}
	if s.Error != "" {
		parts = append(parts, "error: "+s.Error)
	}
	return strings.Join(parts, ", ")
}

// countsLine is counts as "3 done, 2 skipped", fates sorted.
func countsLine(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	fates := make([]string, 0, len(counts))
	for f := range counts {
		fates = append(fates, f)
	}
	sort.Strings(fates)
	parts := make([]string, len(fates))
	for i, f := range fates {
		parts[i] = fmt.Sprintf("%d %s", counts[f], f)
	}
	return strings.Join(parts, ", ")
}
