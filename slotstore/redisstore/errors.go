package redisstore

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// ErrNotReplicated reports a claim, renewal or finish that fewer replicas
// than Options.WaitReplicas acknowledged in time. The master applied it, so
// the error also wraps slotstore.ErrOutcomeUnknown: a failover may yet
// lose it.
var ErrNotReplicated = errors.New("redisstore: not acknowledged by enough replicas")

// errUnsent marks the error of a call the store never sent.
var errUnsent = errors.New("not sent")

// fail turns err, the failure of a call that changes markers, into the error
// callers test for: ErrClosed after Close; the plain error when the request
// certainly did not run; otherwise an error wrapping
// slotstore.ErrOutcomeUnknown, because the request may have run and its
// reply was lost.
func (s *Store) fail(op string, err error) error {
	if s.closed.Load() || errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w: %w", op, slotstore.ErrClosed, err)
	}
	if notRun(err) {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return rules.OutcomeUnknown("redisstore "+op, err)
}

// failRead is fail for a call that changes no marker (History): whether it
// ran does not matter, so no error of it is an unknown outcome.
func (s *Store) failRead(op string, err error) error {
	if s.closed.Load() || errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w: %w", op, slotstore.ErrClosed, err)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// refusals are the prefixes of the error replies with which Redis refuses a
// command before running any of it. Any other error reply may come from a
// script that stopped halfway.
var refusals = []string{
	"NOSCRIPT", "BUSY", "LOADING", "READONLY", "OOM", "NOAUTH", "WRONGPASS", "NOPERM",
	"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "CROSSSLOT", "MASTERDOWN", "NOREPLICAS",
	"MISCONF", "NOTBUSY", "ERR max number of clients",
}

// notRun reports whether err proves the request never ran: Redis refused it,
// or no connection could be had to send it on. Everything else (a timeout, a
// connection lost after writing, a context ended while waiting for the reply)
// leaves the outcome unknown.
func notRun(err error) bool {
	if errors.Is(err, errUnsent) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range refusals {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}

// lost is the error of a fenced mutation whose fence is not the slot's
// running claim.
func lost(op string) error {
	return fmt.Errorf("redisstore: %s: %w", op, slotstore.ErrLeaseLost)
}
