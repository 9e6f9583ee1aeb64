package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// specFacts are what diff and jobs say of a spec: its fingerprint and
// revision, who put it in force and when (a spec of the catalog's only),
// and its schedule.
type specFacts struct {
	Spec     string `json:"spec"`
	Revision int64  `json:"revision"`
	Replica  string `json:"replica,omitempty"`
	Since    string `json:"since,omitempty"`
	Schedule string `json:"schedule,omitempty"`
	Zone     string `json:"zone,omitempty"`
}

// specSide is one side of a diff: a spec, and its next slots from now.
type specSide struct {
	specFacts
	Next []string `json:"next"`
}

// jobDiff is one job a diff lists.
type jobDiff struct {
	Job     string    `json:"job"`
	InForce *specSide `json:"in_force,omitempty"` // removed and changed jobs
	New     *specSide `json:"new,omitempty"`      // added and changed jobs
	// Differences lists the changed fields, each with both values.
	Differences []string `json:"differences,omitempty"`
	// TakesForce predicts whether the new spec takes force when a replica
	// of the file enrolls it (added and changed jobs); Verdict says so in
	// words.
	TakesForce *bool  `json:"takes_force,omitempty"`
	Verdict    string `json:"verdict,omitempty"`
}

// catalogDiff is what diff prints.
type catalogDiff struct {
	Config    string    `json:"config"`
	Revision  int64     `json:"revision"`
	Replica   string    `json:"replica"`
	Now       string    `json:"now"`
	Added     []jobDiff `json:"added"`
	Removed   []jobDiff `json:"removed"`
	Changed   []jobDiff `json:"changed"`
	Unchanged int       `json:"unchanged"`
}

func (d catalogDiff) changes() int { return len(d.Added) + len(d.Removed) + len(d.Changed) }

// cmdDiff compares the jobs of a configuration file with its store's
// catalog in force. Exit 0 with no change, 1 with changes, 2 on error.
func cmdDiff(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("diff", stderr)
	setUsage(fs, "", `
Compares the jobs of the configuration file with the catalog in force in the
store it configures: the jobs the file adds, removes (a job the catalog retired
counts as absent) and changes, field by field, with the next slots of each
changed job under the spec in force and under the file's, and whether the
file's spec would take force when its replica enrolls it (a lower revision
does not: its replicas would conflict and claim nothing). Exit 0 with no
change, 1 with changes, 2 on error. --json prints one JSON document.`)
	n := fs.Int("n", 3, "how many next slots to print of each changed job, 1 to 100")
	asJSON := fs.Bool("json", false, "print one JSON document with added, removed and changed arrays")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 100 {
		return usageError{msg: fmt.Sprintf("diff: -n %d: want 1 to 100", *n)}
	}
	v, err := openCatalog(ctx, *path, reg, stderr)
	if err != nil {
		return err
	}
	defer v.st.Close()
	d := v.diff(time.Now(), *n)
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(d); err != nil {
			return err
		}
	} else {
		printDiff(stdout, d)
	}
	if d.changes() > 0 {
		return errFound
	}
	return nil
}

// diff compares v's file with its catalog at now.
func (v *catalogView) diff(now time.Time, n int) catalogDiff {
	d := catalogDiff{Config: v.path, Revision: v.revision, Replica: v.replica, Now: stamp(now),
		Added: []jobDiff{}, Removed: []jobDiff{}, Changed: []jobDiff{}}
	inFile := map[string]bool{}
	for _, j := range v.jobs {
		inFile[j.Name] = true
		s := v.specs[j.Name]
		rec, body, ok := v.inForce(j.Name)
		if ok && rec.Fingerprint == s.Fingerprint {
			d.Unchanged++
			continue
		}
		jd := jobDiff{Job: j.Name, New: &specSide{specFacts: specFacts{Spec: s.Fingerprint, Revision: s.Revision,
			Schedule: j.Schedule.String(), Zone: j.Schedule.Location().String()}, Next: rfc3339s(slotsAfter(j.Schedule, now, n))}}
		jd.TakesForce, jd.Verdict = v.verdict(j.Name, s)
		if !ok {
			d.Added = append(d.Added, jd)
			continue
		}
		jd.InForce = sideOf(rec, body, now, n)
		jd.Differences = []string{"the spec in force was written by a build this one cannot read"}
		if body.Known {
			jd.Differences = engine.Differences(body.SpecBody, engine.BodyOf(j))
		}
		d.Changed = append(d.Changed, jd)
	}
	for _, en := range v.entries {
		if rec, body, ok := v.inForce(en.Job); ok && !inFile[en.Job] {
			d.Removed = append(d.Removed, jobDiff{Job: en.Job, InForce: sideOf(rec, body, now, n)})
		}
	}
	return d
}

// sideOf is the catalog's side of a diff: rec, whose body is b.
func sideOf(rec slotstore.SpecRecord, b specView, now time.Time, n int) *specSide {
	return &specSide{specFacts: factsOf(rec, b), Next: rfc3339s(nextSlots(b, now, n))}
}

// factsOf is what diff and jobs say of rec, a spec of the catalog whose
// body is b.
func factsOf(rec slotstore.SpecRecord, b specView) specFacts {
	return specFacts{Spec: rec.Fingerprint, Revision: rec.Revision, Replica: rec.Replica, Since: stamp(rec.Since),
		Schedule: b.Schedule, Zone: b.Zone}
}

// verdict predicts whether s, job's spec in the file, takes force when
// the file's replica enrolls it, and says so.
func (v *catalogView) verdict(job string, s slotstore.Spec) (*bool, string) {
	en := v.byJob[job]
	f := en.InForce
	takes := engine.TakesForce(s, en, v.replica)
	switch {
	case takes:
		return &takes, "takes force when its replica enrolls it"
	case s.Revision > 0 && f.Revision > 0:
		return &takes, fmt.Sprintf("would NOT take force: its revision %d is not above %d, the spec in force's; "+
			"its replicas would conflict and claim nothing", s.Revision, f.Revision)
	}
	return &takes, "would NOT take force at enrolment (it was in force before, and replicas carry the one in force): " +
		"its replicas would conflict, and claim nothing until no live replica carries the spec in force"
}

// printDiff prints d for people.
func printDiff(w io.Writer, d catalogDiff) {
	for _, j := range d.Added {
		fmt.Fprintf(w, "added    %s: %s (%s)\n", j.Job, j.New.Schedule, j.New.Zone)
		fmt.Fprintf(w, "    next: %s\n    %s\n", strings.Join(j.New.Next, " "), j.Verdict)
	}
	for _, j := range d.Removed {
		fmt.Fprintf(w, "removed  %s: %s (%s), in force since %s by %s\n", j.Job, j.InForce.Schedule, j.InForce.Zone,
			j.InForce.Since, j.InForce.Replica)
	}
	for _, j := range d.Changed {
		fmt.Fprintf(w, "changed  %s: spec %s (revision %d, since %s by %s) → %s (revision %d)\n", j.Job,
			shortSpec(j.InForce.Spec), j.InForce.Revision, j.InForce.Since, j.InForce.Replica, shortSpec(j.New.Spec), j.New.Revision)
		for _, f := range j.Differences {
			fmt.Fprintf(w, "    %s\n", f)
		}
		fmt.Fprintf(w, "    next in force: %s\n", strings.Join(j.InForce.Next, " "))
		fmt.Fprintf(w, "    next new:      %s\n", strings.Join(j.New.Next, " "))
		fmt.Fprintf(w, "    %s\n", j.Verdict)
	}
	if d.changes() == 0 {
		fmt.Fprintf(w, "no change: the %s of %s match the catalog in force\n", plural(d.Unchanged, "job", "jobs"), d.Config)
		return
	}
	fmt.Fprintf(w, "%d added, %d removed, %d changed, %d unchanged\n", len(d.Added), len(d.Removed), len(d.Changed), d.Unchanged)
}
