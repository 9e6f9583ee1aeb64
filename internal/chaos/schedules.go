package chaos

import (
	"context"
	"encoding/json"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

// putSchedules puts the session's jobs held as data (jobSpec.api) through
// the Go API, as the service they stand for would: before the replicas
// start, and again after the store lost its data (a Redis restarted empty
// or flushed loses its schedules with everything else, and the service
// writes its tenants' schedules again). A put of what the store still has
// changes nothing. Their policies are the YAML jobs' defaults.
func (s *session) putSchedules() {
	reg := jobs.NewRegistry()
	reg.Register("work", func(context.Context, jobs.Run) error { return nil }) // run by the replicas, not here
	cfg, err := scheduler.Parse("chaos-schedules.yaml", []byte(s.defaults()))
	if err != nil {
		s.t.Fatalf("chaos: the schedules' defaults: %v", err)
	}
	var scs []scheduler.Schedule
	for _, j := range s.jobs() {
		if j.api {
			scs = append(scs, scheduler.Schedule{ID: j.name, Job: "work", Schedule: j.spec, Params: json.RawMessage(j.yaml)})
		}
	}
	api := scheduler.NewSchedules(s.store, cfg, reg).By("chaos")
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := api.PutAll(ctx, scs)
		cancel()
		if err == nil {
			for i, r := range res {
				if r.Err != nil {
					s.t.Fatalf("chaos: put schedule %s: %v", scs[i].ID, r.Err)
				}
			}
			return
		}
		if tries == 20 {
			s.t.Fatalf("chaos: put the schedules: %v", err)
		}
		s.oddf("put the schedules (try %d): %v", tries, err)
		time.Sleep(250 * time.Millisecond)
	}
}
