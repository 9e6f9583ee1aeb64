package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// catalogJob is one job of the catalog as jobs prints it.
type catalogJob struct {
	Job string `json:"job"`
	specFacts
	Retired bool `json:"retired"`
	// Carriers are the replicas whose latest enrolment named the spec in
	// force; Others, the live replicas that do not carry it: in conflict,
	// carrying another spec, or running without the job.
	Carriers []string `json:"carriers"`
	Others   []string `json:"others"`
	// File says how the configuration file's job compares: "same" spec,
	// "other" spec, or "absent".
	File string `json:"file"`
}

// fileJob is a job of the file the catalog does not have yet.
type fileJob struct {
	Job string `json:"job"`
	specFacts
}

// catalogList is what jobs prints.
type catalogList struct {
	Config      string       `json:"config"`
	Jobs        []catalogJob `json:"jobs"`
	NotEnrolled []fileJob    `json:"not_enrolled"`
}

// cmdJobs lists the store's catalog and the file's jobs it does not have.
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("jobs", stderr)
	setUsage(fs, "", `
Lists the catalog of the store the configuration file configures: per job the
spec in force (schedule, zone, short fingerprint), the replica whose enrolment
put it in force, its revision and since when, whether it retired the job, the
replicas that carry it and the live replicas that do not (in conflict, or
without the job), and how the file's job compares (same, other, absent); then
the file's jobs the catalog does not have yet. --json prints one JSON document.`)
	asJSON := fs.Bool("json", false, "print one JSON document")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v, err := openCatalog(ctx, *path, reg, stderr)
	if err != nil {
		return err
	}
	defer v.st.Close()
	reps, err := v.st.Replicas(ctx)
	if err != nil {
		return fmt.Errorf("read the replicas' beats: %w", err)
	}
	l := v.list(reps)
	if *asJSON {
		return json.NewEncoder(stdout).Encode(l)
	}
	return printJobs(stdout, l)
}

// list is v's catalog beside reps, the replicas' beats.
func (v *catalogView) list(reps []slotstore.Replica) catalogList {
	l := catalogList{Config: v.path, Jobs: []catalogJob{}, NotEnrolled: []fileJob{}}
	for _, en := range v.entries {
		f := en.InForce
		b := viewOf(f.Body)
		cj := catalogJob{Job: en.Job, specFacts: factsOf(f, b), Retired: b.Retired, Carriers: []string{}, Others: []string{},
			File: "absent"}
		for r := range en.Carriers {
			cj.Carriers = append(cj.Carriers, r)
		}
		sort.Strings(cj.Carriers)
		for _, r := range reps {
			if _, ok := en.Carriers[r.Replica]; r.Live && !ok && !b.Retired {
				cj.Others = append(cj.Others, r.Replica)
			}
		}
		if s, ok := v.specs[en.Job]; ok {
			cj.File = "other"
			if s.Fingerprint == f.Fingerprint {
				cj.File = "same"
			}
		}
		l.Jobs = append(l.Jobs, cj)
	}
	for _, j := range v.jobs {
		if _, ok := v.byJob[j.Name]; !ok {
			s := v.specs[j.Name]
			l.NotEnrolled = append(l.NotEnrolled, fileJob{Job: j.Name, specFacts: specFacts{Spec: s.Fingerprint, Revision: s.Revision,
				Schedule: j.Schedule.String(), Zone: j.Schedule.Location().String()}})
		}
	}
	return l
}

// printJobs prints l as a table.
func printJobs(w io.Writer, l catalogList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tZONE\tSPEC\tREVISION\tSINCE\tBY\tCARRIERS\tNOT CARRYING\tFILE")
	for _, j := range l.Jobs {
		sched := j.Schedule
		if j.Retired {
			sched = "(retired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", j.Job, sched, j.Zone, shortSpec(j.Spec), j.Revision, j.Since,
			j.Replica, orDash(strings.Join(j.Carriers, ",")), orDash(strings.Join(j.Others, ",")), j.File)
	}
	for _, j := range l.NotEnrolled {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t(not enrolled)\t-\t-\t-\tonly\n", j.Job, j.Schedule, j.Zone, shortSpec(j.Spec))
	}
	return tw.Flush()
}
