package etcdstore

import (
	"context"
	"errors"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Schedules implements slotstore.Store. With p.IDs it reads those IDs'
// entries, MaxTxnOps a transaction. Otherwise one range read of an index
// (sched-run/<run>/ with p.Run, else sched-live/), keys only, from p.Prefix
// and after p.After, at most p.Limit keys, chooses the page; its entries
// are then read at the revision of that read, MaxTxnOps a transaction, so
// page and entries are one snapshot.
func (s *Store) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeSchedules(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "schedules"); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		out, err := s.schedules(ctx, p)
		if !errors.Is(err, rpctypes.ErrCompacted) || attempt >= maxRetries {
			return out, err
		}
		// The revision of the page was compacted before its entries
		// were read: choose the page again.
	}
}

// schedules is one attempt of Schedules.
func (s *Store) schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	const op = "schedules"
	listed := func(e slotstore.CatalogEntry) bool { return rules.Listed(e, p) }
	if len(p.IDs) > 0 {
		return s.readEntries(ctx, op, rules.IDs(p), 0, p.Limit, listed)
	}
	base := s.k.live()
	if p.Run != "" {
		base = s.k.byRun(p.Run)
	}
	from, end := base+p.Prefix, clientv3.GetPrefixRangeEnd(base+p.Prefix)
	if after := base + p.After + "\x00"; p.After != "" && after > from {
		from = after
	}
	if from >= end {
		return nil, nil
	}
	resp, err := s.get(ctx, op, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(int64(p.Limit)))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		ids[i] = strings.TrimPrefix(string(kv.Key), base)
	}
	return s.readEntries(ctx, op, ids, resp.Header.Revision, p.Limit, listed)
}

// ScheduleChanges implements slotstore.Store. One transaction reads the
// head key, and only when its ModRevision is above p.After, the sched/
// keys (keys only) whose ModRevision is above it, sorted by ModRevision,
// at most p.Limit: when nothing changed, that is one read of one small
// key. The page's entries are then read at the revision of that read,
// MaxTxnOps a transaction. etcd filters and sorts the sched/ keys by
// ModRevision by reading all of them, on the member: the cost of a page
// grows with the schedules ever written (see Limits in the package
// documentation).
func (s *Store) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	p, err := rules.NormalizeChanges(p)
	if err != nil {
		return slotstore.Changes{}, err
	}
	if err := s.begin(ctx, "schedule changes"); err != nil {
		return slotstore.Changes{}, err
	}
	for attempt := 0; ; attempt++ {
		out, err := s.changes(ctx, p)
		if !errors.Is(err, rpctypes.ErrCompacted) || attempt >= maxRetries {
			return out, err
		}
	}
}

// changes is one attempt of ScheduleChanges.
func (s *Store) changes(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	const op = "schedule changes"
	head := s.k.schedHead()
	changed := clientv3.Compare(clientv3.ModRevision(head), ">", p.After)
	getHead := clientv3.OpGet(head, clientv3.WithKeysOnly())
	page := clientv3.OpGet(s.k.schedules(), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithMinModRev(p.After+1), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend),
		clientv3.WithLimit(int64(p.Limit)))
	resp, err := s.readIf(ctx, op, []clientv3.Cmp{changed}, []clientv3.Op{getHead, page}, []clientv3.Op{getHead})
	if err != nil {
		return slotstore.Changes{}, err
	}
	var out slotstore.Changes
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		out.Head = kvs[0].ModRevision
	}
	if !resp.Succeeded {
		return out, nil
	}
	kvs := resp.Responses[1].GetResponseRange().GetKvs()
	ids := make([]string, len(kvs))
	for i, kv := range kvs {
		ids[i] = strings.TrimPrefix(string(kv.Key), s.k.schedules())
	}
	if out.Entries, err = s.readEntries(ctx, op, ids, resp.Header.Revision, len(ids), nil); err != nil {
		return slotstore.Changes{}, err
	}
	return out, nil
}

// readEntries reads the catalog entries of ids, in their order, at
// revision rev (0 for the newest), MaxTxnOps a transaction, and returns
// those keep keeps (every one with keep nil), at most limit. An ID without
// an entry is passed over.
func (s *Store) readEntries(ctx context.Context, op string, ids []string, rev int64, limit int,
	keep func(slotstore.CatalogEntry) bool) ([]slotstore.CatalogEntry, error) {
	var opts []clientv3.OpOption
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	out := []slotstore.CatalogEntry{}
	for len(ids) > 0 && len(out) < limit {
		n := min(len(ids), s.maxOps)
		ops := make([]clientv3.Op, n)
		for i, id := range ids[:n] {
			ops[i] = clientv3.OpGet(s.k.catalog(id), opts...)
		}
		resp, err := s.read(ctx, op, ops...)
		if err != nil {
			return nil, err
		}
		for i, id := range ids[:n] {
			kvs := resp.Responses[i].GetResponseRange().GetKvs()
			if len(kvs) == 0 {
				continue
			}
			e, err := decodeEntry(id, kvs[0].Value, kvs[0].ModRevision)
			if err != nil {
				return nil, s.failRead(op, err)
			}
			if (keep == nil || keep(e)) && len(out) < limit {
				out = append(out, e)
			}
		}
		ids = ids[n:]
	}
	return out, nil
}
