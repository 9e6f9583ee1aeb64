package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Pauses are keys: pause/all for the whole cluster, pause/job/<job> for a
// job, each holding its note. Every store keeps a copy of them, kept by a
// watch of their range, so it sees another replica's pause as soon as
// etcd tells it (within milliseconds) and Pauses costs no round trip.
// Pauses answers from the copy only once the copy holds this store's own
// last SetPause; before that, and while the watch is down (a member lost,
// the watch being set up again), it reads the keys.

// pauseCache is the copy of the pauses.
type pauseCache struct {
	mu    sync.Mutex
	live  bool      // the watch follows the keys
	rev   int64     // the revision the copy reflects
	heard time.Time // when the watch last answered (events or progress)
	notes map[string]slotstore.PauseNote
	// wrote is the revision of this store's last SetPause.
	wrote atomic.Int64
}

func (c *pauseCache) init() { c.notes = map[string]slotstore.PauseNote{} }

// snapshot returns the pauses from the copy, if it follows the keys and
// has reached revision rev.
func (c *pauseCache) snapshot(rev int64) (slotstore.Pauses, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.rev < rev || time.Since(c.heard) > pauseSilence {
		return slotstore.Pauses{}, false
	}
	return pausesOf(c.notes), true
}

// pausesOf returns the Pauses of notes, a note per job ("" the cluster).
func pausesOf(notes map[string]slotstore.PauseNote) slotstore.Pauses {
	p := slotstore.Pauses{Jobs: []string{}, Notes: maps.Clone(notes)}
	for job := range notes {
		if job == "" {
			p.All = true
		} else {
			p.Jobs = append(p.Jobs, job)
		}
	}
	slices.Sort(p.Jobs)
	return p
}

// SetPause implements slotstore.Store: one put of the pause's key, with
// its note at the store's time, or one delete of it.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	if err := rules.ValidatePause(p); err != nil {
		return err
	}
	op := fmt.Sprintf("set pause of %q", p.Job)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	key := s.k.pause(p.Job)
	w := write{del: true}
	if p.Paused {
		v, _ := json.Marshal(pauseValue{By: p.By, Reason: p.Reason, At: s.now().UTC()})
		w = write{value: v}
	}
	resp, err := s.commit(ctx, op, nil, []string{key}, map[string]write{key: w}, nil)
	if err != nil {
		return s.fail(op, err)
	}
	for {
		old := s.pauses.wrote.Load()
		if old >= resp.Header.Revision || s.pauses.wrote.CompareAndSwap(old, resp.Header.Revision) {
			return nil
		}
	}
}

// Pauses implements slotstore.Store.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	if err := s.begin(ctx, "pauses"); err != nil {
		return slotstore.Pauses{Jobs: []string{}, Notes: map[string]slotstore.PauseNote{}}, err
	}
	if p, ok := s.pauses.snapshot(s.pauses.wrote.Load()); ok {
		return p, nil
	}
	notes, _, err := s.readPauses(ctx)
	if err != nil {
		return slotstore.Pauses{Jobs: []string{}, Notes: map[string]slotstore.PauseNote{}}, err
	}
	return pausesOf(notes), nil
}

// readPauses reads the pause keys and returns their notes and the
// revision read.
func (s *Store) readPauses(ctx context.Context) (map[string]slotstore.PauseNote, int64, error) {
	resp, err := s.get(ctx, "pauses", s.k.pauses(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	notes := map[string]slotstore.PauseNote{}
	for _, kv := range resp.Kvs {
		s.notePause(notes, kv)
	}
	return notes, resp.Header.Revision, nil
}

// notePause records in notes the pause kv holds; a key it does not read
// is passed over.
func (s *Store) notePause(notes map[string]slotstore.PauseNote, kv *mvccpb.KeyValue) {
	job, ok := s.k.pauseJob(string(kv.Key))
	if !ok {
		return
	}
	var v pauseValue
	_ = json.Unmarshal(kv.Value, &v) // a note it cannot read is an empty one
	notes[job] = slotstore.PauseNote{By: v.By, Reason: v.Reason, At: utc(v.At)}
}

// The watch of the pauses asks its member for a progress report every
// pauseProgress; a copy whose watch has not answered for pauseSilence (its
// member frozen or cut off, which the client's watch, reconnecting
// quietly, does not report) is not trusted: Pauses reads the keys instead,
// and the watch starts again on the member requests go to.
const (
	pauseProgress = 300 * time.Millisecond
	pauseSilence  = time.Second
)

// watchPauses keeps the copy of the pauses until the store closes: it
// reads them, then follows their changes from the revision read, and
// starts again when the watch ends (a member lost its leader or went
// away, the revision was compacted).
func (s *Store) watchPauses() {
	for s.bg.Err() == nil {
		s.followPauses()
		pause(s.bg, 200*time.Millisecond)
	}
}

// followPauses reads the pauses into the copy and follows them until the
// watch ends.
func (s *Store) followPauses() {
	c := &s.pauses
	notes, rev, err := s.readPauses(s.bg)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.notes, c.rev, c.live, c.heard = notes, rev, true, time.Now()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.live = false
		c.mu.Unlock()
	}()
	wc := s.client
	if s.members != nil {
		_, wc = s.members.pick()
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.bg))
	defer cancel()
	ch := wc.Watch(wctx, s.k.pauses(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	tick := time.NewTicker(pauseProgress)
	defer tick.Stop()
	for {
		var wr clientv3.WatchResponse
		select {
		case <-tick.C:
			c.mu.Lock()
			quiet := time.Since(c.heard)
			c.mu.Unlock()
			if quiet > pauseSilence {
				return // start again, on the member requests go to now
			}
			if quiet >= pauseProgress {
				_ = wc.RequestProgress(wctx) // only a watch that has said nothing lately is asked
			}
			continue
		case r, ok := <-ch:
			if !ok {
				return
			}
			wr = r
		}
		if wr.Err() != nil || wr.Canceled {
			return
		}
		c.mu.Lock()
		c.heard = time.Now()
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				if job, ok := s.k.pauseJob(string(ev.Kv.Key)); ok {
					delete(c.notes, job)
				}
				continue
			}
			s.notePause(c.notes, ev.Kv)
		}
		c.rev = max(c.rev, wr.Header.Revision)
		c.mu.Unlock()
	}
}
