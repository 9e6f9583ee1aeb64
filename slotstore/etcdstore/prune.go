package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// prunePage is how many markers one read of Prune returns.
const prunePage = 500

// Prune implements slotstore.Store. It reads each job's markers a page at
// a time, oldest first, and deletes those rules.Prunable allows, each in a
// nested transaction that deletes it (with its running copy and holder key
// when it was running) only if its ModRevision is still the one read: a
// marker renewed, finished or claimed again since the read is kept. Pages
// and deletions read and write only current revisions, so a compaction of
// the cluster's history never fails them. It also deletes the beats past
// their TTL and slotstore.BeatKeep, and the entries of the actions log
// past their retention (actions.go).
func (s *Store) Prune(ctx context.Context) (int, error) {
	if err := s.begin(ctx, "prune"); err != nil {
		return 0, err
	}
	jobs, err := s.jobs(ctx, "prune")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, job := range jobs {
		start, end := s.k.markers(job), clientv3.GetPrefixRangeEnd(s.k.markers(job))
		for {
			resp, err := s.get(ctx, "prune", start, clientv3.WithRange(end), clientv3.WithLimit(prunePage))
			if err != nil {
				return n, err
			}
			now := s.now()
			var doomed []slotstore.Marker
			var mods []int64
			for _, kv := range resp.Kvs {
				m, err := markerOf(kv, s.fenceBase.Load())
				if err != nil {
					return n, s.failRead("prune", err)
				}
				if rules.Prunable(m, now) {
					doomed = append(doomed, m)
					mods = append(mods, kv.ModRevision)
				}
			}
			deleted, err := s.deleteMarkers(ctx, doomed, mods)
			n += deleted
			if err != nil {
				return n, err
			}
			if !resp.More {
				break
			}
			start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	_, old, err := s.readBeats(ctx)
	if err != nil {
		return n, err
	}
	if _, err := s.deleteUnchanged(ctx, "prune: delete old beats", old); err != nil {
		return n, err
	}
	acts, err := s.pruneActions(ctx)
	return n + acts, err
}

// deleteMarkers deletes each of ms whose key's ModRevision is still its
// entry of mods, and returns how many it deleted.
func (s *Store) deleteMarkers(ctx context.Context, ms []slotstore.Marker, mods []int64) (int, error) {
	n := 0
	for len(ms) > 0 {
		page := min(len(ms), max(s.maxOps/4, 1))
		ops := make([]clientv3.Op, page)
		for i, m := range ms[:page] {
			k := s.k.marker(m.Job, m.Slot)
			dels := []clientv3.Op{clientv3.OpDelete(k)}
			if m.State == slotstore.StateRunning {
				dels = append(dels, clientv3.OpDelete(s.k.run(m.Job, m.Slot)), clientv3.OpDelete(s.k.holder(m.Job, m.Slot)))
			}
			ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", mods[i])}, dels, nil)
		}
		resp, err := s.commit(ctx, "prune", nil, nil, nil, nil, ops...)
		if err != nil {
			return n, s.fail("prune", err)
		}
		for _, r := range resp.Responses {
			if r.GetResponseTxn().GetSucceeded() {
				n++
			}
		}
		ms, mods = ms[page:], mods[page:]
	}
	return n, nil
}
