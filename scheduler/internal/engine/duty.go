package engine

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/slotstore"
)

// lead campaigns for one duty until ctx ends: in each term this replica
// wins it runs the duty's function with the term's fence until the function
// returns or the term ends (leadership lost, or shutdown, which hands over
// at once). A function that returns of its own accord hands the duty to
// another replica.
func (s *Engine) lead(ctx context.Context, el leader.Elector, d *dutyPlan) {
	p := leader.Params{Name: d.name, Replica: s.replica, Lease: d.lease}
	err := el.Lead(ctx, p, func(tctx context.Context, t leader.Term) {
		duty := jobs.Duty{Name: d.name, Fence: t.Fence, Replica: s.replica}.WithLogger(s.base)
		log := s.base.With(duty.Attrs()...)
		d.term.Store(&slotstore.DutyTerm{Name: d.name, Fence: t.Fence, Since: s.now()})
		defer d.term.Store(nil)
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
