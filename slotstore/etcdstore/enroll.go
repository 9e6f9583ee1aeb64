package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Enroll implements slotstore.Store. One read gives, for a window of jobs,
// each one's generation key and the key of its newest marker (the last of
// its marker keys, which sort by slot); one transaction then begins the
// generations that are missing, if none was begun meanwhile.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeJobs(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "enroll"); err != nil {
		return nil, err
	}
	out := make([]slotstore.Generation, len(jobs))
	b := s.newBatch(ctx, "enroll")
	// Read every generation and newest marker first: the newest needs a
	// read anyway, and then every decision is fresh.
	for i := 0; i < len(jobs); {
		n := min(len(jobs)-i, s.maxOps/2)
		ops := make([]clientv3.Op, 0, 2*n)
		for _, j := range jobs[i : i+n] {
			ops = append(ops, clientv3.OpGet(s.k.gen(j)),
				clientv3.OpGet(s.k.markers(j), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
					clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)))
		}
		resp, err := s.read(ctx, "enroll", ops...)
		if err != nil {
			return nil, err
		}
		for x, j := range jobs[i : i+n] {
			b.learn(s.k.gen(j), resp.Responses[2*x].GetResponseRange().GetKvs())
			out[i+x].Job = j
			if kvs := resp.Responses[2*x+1].GetResponseRange().GetKvs(); len(kvs) > 0 {
				slot, err := slotOf(string(kvs[0].Key))
				if err != nil {
					return nil, s.failRead("enroll", err)
				}
				out[i+x].Newest = slot
			}
		}
		i += n
	}
	err = b.run(len(jobs), func(i int, st *step) {
		out[i].Born = st.born(jobs[i])
	}, func(int, int64) {})
	if err != nil {
		return nil, err
	}
	return out, nil
}
