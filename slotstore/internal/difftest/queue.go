package difftest

import (
	"fmt"
	"time"

	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// crash makes a slot of a job run under a lease that expires at once (its
// holder crashed), now and then taken over a few times under such leases,
// so its attempt grows, and then claims other slots of the job with queue,
// with on_crash retry or skip and a few attempts at most or none, in a
// batch that now and then takes the crashed slot over too, before or after
// them: whether the expired lease holds a queue claim back (a takeover may
// still win the slot) is compared with the rules in Go.
func (d *driver) crash() {
	// Slots of their own, after those the other operations use: the
	// crashed one has no marker before, nor have those the queue claims
	// name, unless an earlier crash's.
	job := jobNames[d.rng.IntN(len(jobNames))]
	d.crashes++
	first := d.base.Add(time.Duration(20+4*d.crashes) * time.Minute)
	slot := first.Add(-time.Duration(d.rng.IntN(2)) * 4 * time.Minute)
	held := slotstore.ClaimRequest{Job: job, Slot: slot, Lease: d.o.Short, MaxAttempts: d.rng.IntN(4)}
	for range 1 + d.rng.IntN(3) {
		d.claimBatch(slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Requests: []slotstore.ClaimRequest{held}})
		time.Sleep(d.o.Pause)
	}
	reqs := make([]slotstore.ClaimRequest, 1+d.rng.IntN(3))
	for i := range reqs {
		reqs[i] = slotstore.ClaimRequest{Job: job, Slot: first.Add(time.Duration(1+d.rng.IntN(3)) * time.Minute),
			Lease: time.Hour, Overlap: policy.OverlapQueue, MaxAttempts: d.rng.IntN(4)}
		if d.rng.IntN(3) == 0 {
			reqs[i].OnCrash = policy.OnCrashSkip
		}
		if d.rng.IntN(8) == 0 {
			reqs[i].Term = true
		}
	}
	if d.rng.IntN(3) == 0 {
		takeover := held
		takeover.Lease = []time.Duration{d.o.Short, time.Hour}[d.rng.IntN(2)]
		at := d.rng.IntN(len(reqs) + 1)
		reqs = append(reqs[:at], append([]slotstore.ClaimRequest{takeover}, reqs[at:]...)...)
	}
	d.claimBatch(slotstore.ClaimParams{Replica: fmt.Sprintf("r%d", d.rng.IntN(3)), Requests: reqs})
}
