package scheduler

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/pgleader"
	"github.com/slotcron/slotcron/leader/redisleader"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// lead campaigns for one duty until ctx ends: in each term this replica
// wins it runs the duty's function with the term's fence until the function
// returns or the term ends (leadership lost, or shutdown, which hands over
// at once). A function that returns of its own accord hands the duty to
// another replica.
func (s *Scheduler) lead(ctx context.Context, el leader.Elector, d *dutyPlan) {
	p := leader.Params{Name: d.name, Replica: s.replica, Lease: d.lease}
	err := el.Lead(ctx, p, func(tctx context.Context, t leader.Term) {
		duty := jobs.Duty{Name: d.name, Fence: t.Fence, Replica: s.replica}.WithLogger(s.log)
		log := s.log.With(duty.Attrs()...)
		err := callDuty(tctx, d.fn, duty)
		switch {
		case tctx.Err() != nil:
			log.Info("duty stopped", "cause", context.Cause(tctx), "err", errString(err))
		case err != nil:
			log.Error("duty failed; handing it over", "err", err)
		default:
			log.Info("duty returned; handing it over")
		}
	})
	if err != nil {
		s.log.Error("duty cannot campaign", "duty", d.name, "err", err)
	}
}

func callDuty(ctx context.Context, fn jobs.DutyFunc, d jobs.Duty) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.Logger().Error("duty panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx, d)
}

// elector returns the elector duties campaign with, and a func that
// releases what it opened: on Redis, leases beside the store's keys on the
// store's own connections (followers woken by pub/sub); on Postgres, a
// session advisory lock on a dedicated connection plus a lease row (woken
// by NOTIFY); on SQLite and memory, a lease slot in the slot store itself.
func (s *Scheduler) elector(ctx context.Context) (leader.Elector, func(), error) {
	if err := leader.Register(s.registry); err != nil {
		return nil, nil, fmt.Errorf("duties: register metrics: %w", err)
	}
	switch st := s.store.(type) {
	case *redisstore.Store:
		return redisleader.New(st.Client(), redisleader.Options{Prefix: st.Prefix() + "leader:", Logger: s.log}), func() {}, nil
	case *pgstore.Store:
		if dsn := s.cfg.Store.Postgres.DSN; dsn != "" {
			el, err := pgleader.New(ctx, pgleader.Options{DSN: dsn, Schema: st.Schema(), Logger: s.log})
			if err != nil {
				return nil, nil, fmt.Errorf("duties: %w", err)
			}
			return el, func() {}, nil
		}
	}
	d := &slotDriver{store: s.store, poll: 100 * time.Millisecond}
	return leader.NewElector(d, leader.Options{Logger: s.log}), func() {}, nil
}
