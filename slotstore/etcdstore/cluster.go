package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// checkCluster reads the record of the cluster the prefix's keys were
// written in, the first request of a store: it checks that the cluster
// answers, linearizably. A prefix with no record gets one. A record of
// another cluster means the keys came from elsewhere, most likely a
// snapshot restored into a new cluster: the keys are as they were when
// the snapshot was taken, and whatever happened since is lost. Then every
// generation is deleted, in the same transaction that records the cluster,
// so each job begins a new one at its next claim or enrollment: slots from
// before it that have no marker are skipped for data loss, not run, and
// markers the snapshot holds as running are abandoned once their lease has
// ended, not taken over (slotstore's package documentation, Generation).
func (s *Store) checkCluster(ctx context.Context) error {
	key := s.k.cluster()
	for range 10 {
		resp, err := s.get(ctx, "check the cluster", key)
		if err != nil {
			return err
		}
		id := fmt.Sprintf("%x", resp.Header.ClusterId)
		// A new record's fence base: the store's clock in microseconds,
		// above every fence (an older base plus fewer revisions than
		// microseconds have passed since) issued before it, and above
		// every fence this store issued.
		s.sawRev(resp.Header.Revision)
		base := max(s.now().UnixMicro(), s.fenceBase.Load()+s.lastRev.Load()+1)
		rec, _ := json.Marshal(clusterValue{ID: id, FenceBase: base})
		var cmps []clientv3.Cmp
		var then []clientv3.Op
		if len(resp.Kvs) == 0 {
			cmps = []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
			then = []clientv3.Op{clientv3.OpPut(key, string(rec))}
		} else {
			var v clusterValue
			if err := json.Unmarshal(resp.Kvs[0].Value, &v); err == nil && v.ID == id {
				s.fenceBase.Store(v.FenceBase)
				s.clusterRev.Store(resp.Kvs[0].CreateRevision)
				return nil
			}
			cmps = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)}
			then = []clientv3.Op{clientv3.OpDelete(s.k.genDir(), clientv3.WithPrefix()), clientv3.OpPut(key, string(rec))}
		}
		rctx, cancel := s.rpc(ctx)
		tr, err := s.client.Txn(rctx).If(cmps...).Then(then...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("etcdstore: record the cluster: %w", err)
		}
		if tr.Succeeded {
			s.fenceBase.Store(base)
			s.clusterRev.Store(tr.Header.Revision)
			if len(resp.Kvs) > 0 {
				s.clusterRev.Store(resp.Kvs[0].CreateRevision) // rewritten in place
			}
			return nil
		}
	}
	return fmt.Errorf("etcdstore: record the cluster: %w", ErrConflict)
}

// sawRev records that the store has seen revision rev.
func (s *Store) sawRev(rev int64) {
	for {
		old := s.lastRev.Load()
		if rev <= old || s.lastRev.CompareAndSwap(old, rev) {
			return
		}
	}
}
