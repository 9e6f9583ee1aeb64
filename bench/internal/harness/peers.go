package harness

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"
)

// A peer knows no nominal slot: its lateness is the entry time minus the
// entry time truncated to the second, which is right while the peer is
// less than a second late.
func peerSlot(now time.Time) time.Time { return now.Truncate(time.Second) }

// startRobfig schedules the workload on robfig/cron v3 with a seconds field.
func startRobfig(_ context.Context, w workload, rec *recorder) (func(), error) {
	c := cron.New(cron.WithSeconds())
	for i := range w.jobs {
		if _, err := c.AddFunc(w.spec(i), func() {
			now := time.Now()
			rec.record(i, peerSlot(now), now)
		}); err != nil {
			return nil, fmt.Errorf("robfig AddFunc: %w", err)
		}
	}
	c.Start()
	return func() { <-c.Stop().Done() }, nil
}

// startGocron schedules the workload on gocron v2 with a seconds field.
func startGocron(_ context.Context, w workload, rec *recorder) (func(), error) {
	s, err := gocron.NewScheduler()
	if err != nil {
		return nil, fmt.Errorf("gocron: %w", err)
	}
	for i := range w.jobs {
		if _, err := s.NewJob(gocron.CronJob(w.spec(i), true), gocron.NewTask(func() {
			now := time.Now()
			rec.record(i, peerSlot(now), now)
		})); err != nil {
			_ = s.Shutdown()
			return nil, fmt.Errorf("gocron NewJob: %w", err)
		}
	}
	s.Start()
	return func() { _ = s.Shutdown() }, nil
}

// startTimer is the floor: one time.AfterFunc per job, set to its next
// slot and set again when it fires. It knows each slot exactly.
func startTimer(_ context.Context, w workload, rec *recorder) (func(), error) {
	var stopped atomic.Bool
	timers := make([]atomic.Pointer[time.Timer], w.jobs)
	var arm func(i int, slot int64)
	arm = func(i int, slot int64) {
		at := time.Unix(slot, 0)
		timers[i].Store(time.AfterFunc(time.Until(at), func() {
			if stopped.Load() {
				return
			}
			rec.record(i, at, time.Now())
			arm(i, w.next(i, slot))
		}))
	}
	now := time.Now().Unix()
	for i := range w.jobs {
		arm(i, w.next(i, now))
	}
	return func() {
		stopped.Store(true)
		for i := range timers {
			if t := timers[i].Load(); t != nil {
				t.Stop()
			}
		}
	}, nil
}
