package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Enroll implements slotstore.Store. One read gives, for a window of jobs,
// each one's generation key, the key of its newest marker (the last of its
// marker keys, which sort by slot) and its catalog entry, with specs its
// spec key too; one transaction then begins the generations that are
// missing and applies the specs (catalog.go), if none of the keys read
// changed meanwhile.
func (s *Store) Enroll(ctx context.Context, p slotstore.EnrollParams) ([]slotstore.Generation, error) {
	jobs, err := rules.NormalizeEnroll(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "enroll"); err != nil {
		return nil, err
	}
	out := make([]slotstore.Generation, len(jobs))
	b := s.newBatch(ctx, "enroll")
	// Read every key first: the newest needs a read anyway, and then every
	// decision is fresh.
	per := 3
	if p.Specs != nil {
		per = 4
	}
	for i := 0; i < len(jobs); {
		n := min(len(jobs)-i, s.maxOps/per)
		ops := make([]clientv3.Op, 0, per*n)
		for _, j := range jobs[i : i+n] {
			ops = append(ops, clientv3.OpGet(s.k.gen(j)),
				clientv3.OpGet(s.k.markers(j), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
					clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)),
				clientv3.OpGet(s.k.catalog(j)))
			if p.Specs != nil {
				ops = append(ops, clientv3.OpGet(s.k.spec(j)))
			}
		}
		resp, err := s.read(ctx, "enroll", ops...)
		if err != nil {
			return nil, err
		}
		for x, j := range jobs[i : i+n] {
			r := resp.Responses[per*x : per*(x+1)]
			b.learn(s.k.gen(j), r[0].GetResponseRange().GetKvs())
			b.learn(s.k.catalog(j), r[2].GetResponseRange().GetKvs())
			if p.Specs != nil {
				b.learn(s.k.spec(j), r[3].GetResponseRange().GetKvs())
			}
			out[i+x].Job = j
			if kvs := r[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
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
		var sp *slotstore.Spec
		if p.Specs != nil {
			sp = &p.Specs[i]
		}
		out[i].Spec = st.offer(jobs[i], sp, p.Replica)
	}, func(int, int64) {})
	if err != nil {
		return nil, err
	}
	return out, nil
}
