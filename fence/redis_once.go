package fence

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/jobs"
)

var (
	//go:embed scripts/setonce.lua
	setOnceSrc string

	setOnceScript = redis.NewScript(setOnceSrc)
)

// SetOnce stores value under key, fenced as Set stores it, at most once per
// slot: with the value it records, in the same Lua script, that run's slot
// has written key, and a later SetOnce of key for the same slot — a repeat
// after the holder committed and died, a newer holder, a stale one —
// changes nothing and returns an *AppliedError wrapping ErrApplied. A job
// that gets it returns nil: the slot's value is stored. The error also
// wraps a *StaleError (ErrStale) when a newer holder stored it.
//
// As with Set, a fence below the highest key has seen — a newer holder of
// this slot or of a later slot of the job stored a value since — changes
// nothing and returns a *StaleError wrapping ErrStale, without ErrApplied:
// key holds a newer value than this run's. A positive ttl makes the value
// expire after ttl; the record does not expire with it.
//
// The record is one string per key and slot, kept for r.Retain
// (DefaultRetain when zero) after the later of the write and the slot, by
// Redis's clock (PX), then dropped by Redis. It is named
// "{<Prefix><key>}:once:<run key>", in the hash slot of the key's hash, or
// "<Prefix><key>:once:<run key>" when the key's name has a hash tag of its
// own; a key whose name has braces but no hash tag ("a}b") is refused with
// ErrInvalid, since no record name would share its hash slot. Each key a job
// writes has its own record, so a job writing several keys per slot calls
// SetOnce for each, and a successor completes what a dead holder left
// half done.
//
// A retried SetOnce (go-redis retries on network errors) whose first try
// was applied returns ErrApplied, which is right: the value is stored. A
// Redis without persistence that restarts forgets the records, and a
// repeat may then write again.
func (r Redis) SetOnce(ctx context.Context, key string, run jobs.Run, value []byte, ttl time.Duration) error {
	retain, err := checkSetOnce(key, run, ttl, r.Retain)
	if err != nil {
		return err
	}
	hash := r.key(key)
	record, err := onceKey(hash, run.Key())
	if err != nil {
		return err
	}
	op := fmt.Sprintf("set once %q run %s fence %d", key, run.Key(), run.Fence)
	res, err := setOnceScript.Run(ctx, r.Client, []string{hash, record},
		strconv.FormatInt(run.Fence, 10), value, millis(ttl), millis(retain), run.Slot.UnixMilli()).Slice()
	if err != nil {
		return fmt.Errorf("fence: %s: %w", op, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("fence: %s: unexpected reply %v", op, res)
	}
	status, _ := res[0].(int64)
	f, err := parseFence(res[1])
	if err != nil {
		return fmt.Errorf("fence: %s: %w", op, err)
	}
	switch status {
	case 1:
		return nil
	case 2:
		return refuse(r.Logger, key, &AppliedError{Resource: key, Key: run.Key(), Fence: run.Fence, Applied: f})
	case 0:
		return reject(r.Logger, key, run.Fence, f)
	}
	return fmt.Errorf("fence: %s: unexpected reply %v", op, res)
}

// onceKey names the record of run key runKey for the hash named hash, so
// that both lie in one Cluster hash slot. Redis hashes a name's first
// {tag} when it has one (a '{', then a '}' after it, something between),
// and the whole name otherwise.
func onceKey(hash, runKey string) (string, error) {
	if open := strings.IndexByte(hash, '{'); open >= 0 {
		if n := strings.IndexByte(hash[open+1:], '}'); n > 0 {
			return hash + ":once:" + runKey, nil // the record starts with hash's own tag
		}
	}
	if strings.ContainsRune(hash, '}') {
		return "", fmt.Errorf("%w: key %q has a '}' but no hash tag: no record can share its Cluster hash slot", ErrInvalid, hash)
	}
	return "{" + hash + "}:once:" + runKey, nil
}

// millis returns d in whole milliseconds, rounded up, so a positive
// duration never becomes zero.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
