package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Beat implements slotstore.Store: one put of the replica's beat key, with
// the store's time. Replicas and Prune delete the beats past their TTL and
// slotstore.BeatKeep.
func (s *Store) Beat(ctx context.Context, p slotstore.Beat) error {
	if err := rules.ValidateBeat(p); err != nil {
		return err
	}
	op := fmt.Sprintf("beat of %q", p.Replica)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	duties, err := json.Marshal(rules.DutiesJSON(p.Duties))
	if err != nil {
		return fmt.Errorf("etcdstore: %s: encode duties: %w", op, err)
	}
	v, err := json.Marshal(beatValue{
		Replica: p.Replica, Incarnation: p.Incarnation, Version: p.Version, Started: utc(p.Started),
		Duties: duties, TTL: p.TTL, Seen: s.now().UTC(), Revision: p.Revision,
	})
	if err != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	key := s.k.beat(p.Replica)
	if _, err := s.commit(ctx, op, nil, []string{key}, map[string]write{key: {value: v}}, nil); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Replicas implements slotstore.Store: one read of the beats, and, when it
// met beats past their TTL and slotstore.BeatKeep, one transaction that
// deletes those of them no replica has replaced since.
func (s *Store) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	if err := s.begin(ctx, "replicas"); err != nil {
		return nil, err
	}
	out, old, err := s.readBeats(ctx)
	if err != nil {
		return nil, err
	}
	if len(old) > 0 {
		if _, err := s.deleteUnchanged(ctx, "replicas: delete old beats", old); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readBeats returns the beats within their TTL and slotstore.BeatKeep by
// the store's clock, sorted by replica, and the keys of the others.
func (s *Store) readBeats(ctx context.Context) ([]slotstore.Replica, []*mvccpb.KeyValue, error) {
	resp, err := s.get(ctx, "replicas", s.k.beats(), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	out := []slotstore.Replica{}
	var old []*mvccpb.KeyValue
	for _, kv := range resp.Kvs {
		var v beatValue
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			return nil, nil, s.failRead("replicas", fmt.Errorf("decode beat %q: %w", kv.Key, err))
		}
		r := slotstore.Replica{
			Beat: slotstore.Beat{Replica: v.Replica, Incarnation: v.Incarnation, Version: v.Version,
				Started: utc(v.Started), TTL: v.TTL, Revision: v.Revision},
			Seen: v.Seen.UTC(),
		}
		if now.After(r.Seen.Add(r.TTL).Add(slotstore.BeatKeep)) {
			old = append(old, kv)
			continue
		}
		var ds []rules.DutyJSON
		if err := json.Unmarshal(v.Duties, &ds); err != nil {
			return nil, nil, s.failRead("replicas", fmt.Errorf("duties of %q: %w", v.Replica, err))
		}
		r.Duties = rules.Duties(ds)
		r.Live = !now.After(r.Seen.Add(r.TTL))
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b slotstore.Replica) int { return cmp.Compare(a.Replica, b.Replica) })
	return out, old, nil
}

// deleteUnchanged deletes the keys of kvs that still have the ModRevision
// read, a transaction of nested compare-and-deletes per maxOps/4 of them,
// and returns how many it deleted.
func (s *Store) deleteUnchanged(ctx context.Context, op string, kvs []*mvccpb.KeyValue) (int, error) {
	n := 0
	for len(kvs) > 0 {
		page := kvs[:min(len(kvs), max(s.maxOps/4, 1))]
		kvs = kvs[len(page):]
		ops := make([]clientv3.Op, len(page))
		for i, kv := range page {
			k := string(kv.Key)
			ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)},
				[]clientv3.Op{clientv3.OpDelete(k)}, nil)
		}
		resp, err := s.commit(ctx, op, nil, nil, nil, nil, ops...)
		if err != nil {
			return n, s.fail(op, err)
		}
		for _, r := range resp.Responses {
			if r.GetResponseTxn().GetSucceeded() {
				n++
			}
		}
	}
	return n, nil
}
