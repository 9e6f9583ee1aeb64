package fence

import (
	"context"
	"time"

	"github.com/slotcron/slotcron/jobs"
)

// sweepEvery is how many SetOnce records Memory adds between two sweeps of
// the expired ones, so a long-lived Memory stays bounded at a cost
// amortised over the writes.
const sweepEvery = 1024

// memOnce holds the records of Memory.SetOnce: when each expires, by key
// and run key.
type memOnce struct {
	records map[memRecord]memApplied
	added   int // since the last sweep
}

type memRecord struct{ key, run string }

type memApplied struct {
	fence   int64
	expires time.Time
}

// SetOnce implements KV: it stores value under key as Set does, at most
// once per slot, as Redis.SetOnce does. Records and TTLs run on this
// process's clock.
func (m *Memory) SetOnce(ctx context.Context, key string, run jobs.Run, value []byte, ttl time.Duration) error {
	retain, err := checkSetOnce(key, run, ttl, m.Retain)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	rec := memRecord{key, run.Key()}
	if a, ok := m.once.records[rec]; ok && now.Before(a.expires) {
		return refuse(m.Logger, key, &AppliedError{Resource: key, Key: rec.run, Fence: run.Fence, Applied: a.fence})
	}
	if err := m.setLocked(key, run.Fence, value, ttl); err != nil {
		return err
	}
	m.once.add(rec, memApplied{fence: run.Fence, expires: later(now, run.Slot).Add(retain)}, now)
	return nil
}

func (o *memOnce) add(rec memRecord, a memApplied, now time.Time) {
	if o.records == nil {
		o.records = make(map[memRecord]memApplied)
	}
	o.records[rec] = a
	if o.added++; o.added < sweepEvery {
		return
	}
	o.added = 0
	for r, a := range o.records {
		if !now.Before(a.expires) {
			delete(o.records, r)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
