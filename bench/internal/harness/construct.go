package harness

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

// construction is the cost of registering n jobs with one scheduler.
type construction struct {
	name      string
	err       error
	perJob    time.Duration
	heapPer   float64 // bytes of live heap per job
	configPer float64 // slotcron only: the heap of the Config built, per job, before New
	loadB     string
	loadA     string
}

// construct registers n spread jobs with the named scheduler, timing it
// and measuring the live heap it adds (runtime.GC, then HeapAlloc). For
// slotcron the time is scheduler.New's on a Config built beforehand, and
// the heap is all the Scheduler keeps after New, its Config included.
func construct(name string, n int) (c construction) {
	c = construction{name: name, loadB: loadAvg()}
	defer func() { c.loadA = loadAvg() }()
	w := workload{jobs: n}
	noop := func() {}
	var keep any
	var release func()
	var elapsed time.Duration
	time.Sleep(500 * time.Millisecond) // let the previous scheduler's goroutines end
	h0 := heapAfterGC()
	switch name {
	case "slotcron":
		reg := jobs.NewRegistry()
		reg.Register("noop", func(_ context.Context, _ jobs.Run) error { return nil })
		cfg := benchConfig(w, "r1", scheduler.StoreConfig{Kind: "memory"})
		c.configPer = (float64(heapAfterGC()) - float64(h0)) / float64(n)
		t := time.Now()
		s, err := scheduler.New(cfg, reg)
		elapsed = time.Since(t)
		if err != nil {
			c.err = err
			return c
		}
		// Only the Scheduler is kept: the heap counted is everything it
		// holds, what it keeps of the Config included, from before the
		// Config was built.
		keep = s
	case "robfig":
		t := time.Now()
		cr := cron.New(cron.WithSeconds())
		for i := range n {
			if _, err := cr.AddFunc(w.spec(i), noop); err != nil {
				c.err = err
				return c
			}
		}
		elapsed = time.Since(t)
		keep = cr
	case "gocron":
		t := time.Now()
		s, err := gocron.NewScheduler()
		if err != nil {
			c.err = err
			return c
		}
		for i := range n {
			if _, err := s.NewJob(gocron.CronJob(w.spec(i), true), gocron.NewTask(noop)); err != nil {
				c.err = err
				_ = s.Shutdown()
				return c
			}
		}
		elapsed = time.Since(t)
		keep, release = s, func() { _ = s.Shutdown() }
	case "timer":
		t := time.Now()
		now := time.Now().Unix()
		timers := make([]*time.Timer, n)
		for i := range n {
			timers[i] = time.AfterFunc(time.Until(time.Unix(w.next(i, now), 0)), noop)
		}
		elapsed = time.Since(t)
		keep, release = timers, func() {
			for _, t := range timers {
				t.Stop()
			}
		}
	default:
		c.err = fmt.Errorf("unknown scheduler %s", name)
		return c
	}
	h1 := heapAfterGC()
	runtime.KeepAlive(keep)
	if release != nil {
		release()
	}
	keep = nil
	c.perJob = elapsed / time.Duration(n)
	c.heapPer = (float64(h1) - float64(h0)) / float64(n)
	return c
}
