package redisleader

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
)

// session is one campaign's use of Redis: the scripts, and a subscription
// to the name's release channel.
type session struct {
	c        redis.UniversalClient
	name     string
	holder   string
	keys     keys
	ps       *redis.PubSub
	released <-chan *redis.Message
}

// Acquire implements driver.Session.
func (s *session) Acquire(ctx context.Context, lease time.Duration) (driver.Attempt, error) {
	res, err := acquireScript.Run(ctx, s.c, []string{s.keys.lease, s.keys.fence}, s.holder, lease.Milliseconds()).Slice()
	if err != nil {
		return driver.Attempt{}, fmt.Errorf("redisleader: acquire %s: %w", s.name, err)
	}
	if len(res) != 2 {
		return driver.Attempt{}, fmt.Errorf("redisleader: acquire %s: unexpected reply %v", s.name, res)
	}
	if won, _ := res[0].(int64); won == 1 {
		text, _ := res[1].(string)
		f, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return driver.Attempt{}, fmt.Errorf("redisleader: acquire %s: unexpected fence %v", s.name, res[1])
		}
		return driver.Attempt{Won: true, Fence: f}, nil
	}
	ms, _ := res[1].(int64)
	if ms == -1 { // a lease with no expiry: never written by this package
		return driver.Attempt{Remaining: lease}, nil
	}
	return driver.Attempt{Remaining: time.Duration(max(ms, 0)) * time.Millisecond}, nil
}

// Renew implements driver.Session.
func (s *session) Renew(ctx context.Context, fence int64, lease time.Duration) error {
	n, err := renewScript.Run(ctx, s.c, []string{s.keys.lease}, strconv.FormatInt(fence, 10), lease.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("redisleader: renew %s fence %d: %w", s.name, fence, err)
	}
	if n != 1 {
		return fmt.Errorf("redisleader: renew %s fence %d: %w", s.name, fence, leader.ErrLeaseLost)
	}
	return nil
}

// Release implements driver.Session.
func (s *session) Release(ctx context.Context, fence int64) error {
	err := releaseScript.Run(ctx, s.c, []string{s.keys.lease}, strconv.FormatInt(fence, 10), s.keys.channel).Err()
	if err != nil {
		return fmt.Errorf("redisleader: release %s fence %d: %w", s.name, fence, err)
	}
	return nil
}

// Wait implements driver.Session. Any message on the channel wakes it,
// including one left from this session's own release: an early return
// costs one Acquire.
func (s *session) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case _, ok := <-s.released:
		if !ok {
			return errors.New("redisleader: " + s.name + ": subscription closed")
		}
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements driver.Session.
func (s *session) Close() error { return s.ps.Close() }
