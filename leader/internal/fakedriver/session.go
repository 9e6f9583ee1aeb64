package fakedriver

import (
	"context"
	"fmt"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

type session struct {
	d        *Driver
	name     string
	holder   string
	released chan struct{} // one buffered wake-up
}

func (s *session) Acquire(ctx context.Context, d time.Duration) (driver.Attempt, error) {
	if err := s.d.gate(ctx); err != nil {
		return driver.Attempt{}, err
	}
	st := s.d.s
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	if l, ok := st.leases[s.name]; ok && l.holder != s.holder && now.Before(l.expires) {
		return driver.Attempt{Remaining: l.expires.Sub(now)}, nil
	}
	st.fences[s.name]++
	f := st.fences[s.name]
	st.leases[s.name] = lease{holder: s.holder, fence: f, expires: now.Add(d)}
	return driver.Attempt{Won: true, Fence: f}, nil
}

func (s *session) Renew(ctx context.Context, fence int64, d time.Duration) error {
	if err := s.d.gate(ctx); err != nil {
		return err
	}
	st := s.d.s
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	l, ok := st.leases[s.name]
	if !ok || l.fence != fence || !now.Before(l.expires) {
		return fmt.Errorf("fakedriver: renew %s fence %d: %w", s.name, fence, leader.ErrLeaseLost)
	}
	l.expires = now.Add(d)
	st.leases[s.name] = l
	return nil
}

func (s *session) Release(ctx context.Context, fence int64) error {
	if err := s.d.gate(ctx); err != nil {
		return err
	}
	st := s.d.s
	st.mu.Lock()
	defer st.mu.Unlock()
	if l, ok := st.leases[s.name]; ok && l.fence == fence {
		delete(st.leases, s.name)
		for w := range st.waiters[s.name] {
			select {
			case w.released <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (s *session) Wait(ctx context.Context, d time.Duration) error {
	if err := s.d.gate(ctx); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.released:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.d.stalled:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *session) Close() error {
	st := s.d.s
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.waiters[s.name], s)
	return nil
}
