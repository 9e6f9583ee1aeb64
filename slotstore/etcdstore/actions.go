package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The actions log is a key an entry, act/<seq>, its seq zero-padded to 19
// digits so that the keys sort by it; a key an entry by expiry,
// act-exp/<keep until>/<seq>, for Prune; and the counter act-head, the last
// seq given. An append is one transaction that puts all three if the
// counter is still the one the store read: appends take effect one at a
// time, in seq order, and a page read by key range sees every entry below
// the newest it sees.

// actionValue is an entry as its key holds it, in JSON.
type actionValue struct {
	At     time.Time     `json:"at"`
	Who    string        `json:"who"`
	Role   string        `json:"role,omitempty"`
	Via    string        `json:"via"`
	Kind   string        `json:"kind"`
	Target string        `json:"target,omitempty"`
	Reason string        `json:"reason,omitempty"`
	Result string        `json:"result"`
	Detail string        `json:"detail,omitempty"`
	Retain time.Duration `json:"retain"`
}

// AppendAction implements slotstore.Store: a read of the counter, then one
// transaction that raises it and puts the entry and its expiry key, if the
// counter is still the one read; when another append came first, the
// transaction's else branch reads the counter again, and the store tries
// again, at most maxConflicts times before ErrConflict.
func (s *Store) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	if err := rules.ValidateAction(a); err != nil {
		return slotstore.Action{}, err
	}
	const op = "append action"
	if err := s.begin(ctx, op); err != nil {
		return slotstore.Action{}, err
	}
	head := s.k.actHead()
	resp, err := s.get(ctx, op, head)
	if err != nil {
		return slotstore.Action{}, err
	}
	kvs := resp.Kvs
	for conflicts := 0; ; conflicts++ {
		last, rev, err := headOf(kvs)
		if err != nil {
			return slotstore.Action{}, s.failRead(op, err)
		}
		a.Seq, a.At = last+1, s.now().UTC().Truncate(time.Millisecond)
		v, _ := json.Marshal(actionValue{At: a.At, Who: a.Who, Role: a.Role, Via: a.Via, Kind: a.Kind, Target: a.Target,
			Reason: a.Reason, Result: a.Result, Detail: a.Detail, Retain: a.Retain}) // strings and times always marshal
		key, exp := s.k.action(a.Seq), s.k.actExpiryOf(a.At.UnixMilli()+a.Retain.Milliseconds(), a.Seq)
		writes := map[string]write{head: {value: []byte(strconv.FormatInt(a.Seq, 10))}, key: {value: v}, exp: {}}
		tx, err := s.commit(ctx, op, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(head), "=", rev)},
			[]string{head, key, exp}, writes, []clientv3.Op{clientv3.OpGet(head)})
		switch {
		case err != nil:
			return slotstore.Action{}, s.fail(op, err)
		case tx.Succeeded:
			return a, nil
		case conflicts >= maxConflicts:
			return slotstore.Action{}, fmt.Errorf("etcdstore: %s: %w (%d attempts)", op, ErrConflict, conflicts+1)
		}
		kvs = tx.Responses[0].GetResponseRange().GetKvs()
		pause(ctx, rand.N(retryWait(conflicts)))
	}
}

// headOf returns the last seq the counter kvs holds and its ModRevision;
// 0 and 0 for none.
func headOf(kvs []*mvccpb.KeyValue) (last, rev int64, err error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	last, err = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("actions counter %q: %w", kvs[0].Value, err)
	}
	return last, kvs[0].ModRevision, nil
}

// actionPage is how many seqs one read of Actions covers, beyond Limit,
// when the request has filters, and how many entries one transaction of
// Prune deletes at most.
const actionPage = 500

// Actions implements slotstore.Store. It reads ranges of act/ keys back
// from Before, each of the seqs just below the last (Limit of them without
// filters, 500 with), the oldest entry's key first, so that it stops where
// the log does; each range is one read of the keys it returns.
func (s *Store) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	p, err := rules.NormalizeActions(p)
	if err != nil {
		return nil, err
	}
	const op = "actions"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	// The oldest entry, and the counter, in one read.
	first, err := s.read(ctx, op, clientv3.OpGet(s.k.actions(), clientv3.WithPrefix(), clientv3.WithLimit(1)),
		clientv3.OpGet(s.k.actHead()))
	if err != nil {
		return nil, err
	}
	out := []slotstore.Action{}
	oldest := first.Responses[0].GetResponseRange().GetKvs()
	last, _, err := headOf(first.Responses[1].GetResponseRange().GetKvs())
	if err != nil || len(oldest) == 0 {
		return out, err
	}
	low, err := s.actionOf(oldest[0])
	if err != nil {
		return nil, err
	}
	top := last + 1 // exclusive
	if p.Before > 0 {
		top = min(top, p.Before)
	}
	span := int64(p.Limit)
	if p.Who != "" || p.Kind != "" || p.Target != "" || !p.Since.IsZero() {
		span = max(span, actionPage)
	}
	for top > low.Seq && len(out) < p.Limit {
		from := max(top-span, low.Seq)
		resp, err := s.get(ctx, op, s.k.action(from), clientv3.WithRange(s.k.action(top)))
		if err != nil {
			return nil, err
		}
		for i := len(resp.Kvs) - 1; i >= 0 && len(out) < p.Limit; i-- {
			a, err := s.actionOf(resp.Kvs[i])
			if err != nil {
				return nil, err
			}
			if rules.ActionListed(a, p) {
				out = append(out, a)
			}
		}
		top = from
	}
	return out, nil
}

// actionOf decodes the entry kv holds.
func (s *Store) actionOf(kv *mvccpb.KeyValue) (slotstore.Action, error) {
	seq, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), s.k.actions()), 10, 64)
	var v actionValue
	if err == nil {
		err = json.Unmarshal(kv.Value, &v)
	}
	if err != nil {
		return slotstore.Action{}, s.failRead("actions", fmt.Errorf("decode entry %q: %w", kv.Key, err))
	}
	return slotstore.Action{Seq: seq, At: utc(v.At), Who: v.Who, Role: v.Role, Via: v.Via, Kind: v.Kind, Target: v.Target,
		Reason: v.Reason, Result: v.Result, Detail: v.Detail, Retain: v.Retain}, nil
}

// pruneActions deletes the entries whose expiry key is before the store's
// clock, with their expiry keys, a page at a time, and returns how many.
// An entry is never changed, so a delete needs no compare; one another
// Prune deleted first is not counted.
func (s *Store) pruneActions(ctx context.Context) (int, error) {
	const op = "prune actions"
	n := 0
	for {
		now := s.now().UnixMilli()
		resp, err := s.get(ctx, op, s.k.actExpiry(), clientv3.WithRange(fmt.Sprintf("%s%019d", s.k.actExpiry(), now)),
			clientv3.WithKeysOnly(), clientv3.WithLimit(int64(min(actionPage, max(s.maxOps/2, 1)))))
		if err != nil || len(resp.Kvs) == 0 {
			return n, err
		}
		var ops []clientv3.Op
		for _, kv := range resp.Kvs {
			seq, err := strconv.ParseInt(string(kv.Key[strings.LastIndexByte(string(kv.Key), '/')+1:]), 10, 64)
			if err != nil {
				return n, s.failRead(op, fmt.Errorf("expiry key %q: %w", kv.Key, err))
			}
			ops = append(ops, clientv3.OpDelete(s.k.action(seq)), clientv3.OpDelete(string(kv.Key)))
		}
		tx, err := s.commit(ctx, op, nil, nil, nil, nil, ops...)
		if err != nil {
			return n, s.fail(op, err)
		}
		for i := 0; i < len(tx.Responses); i += 2 {
			n += int(tx.Responses[i].GetResponseDeleteRange().GetDeleted())
		}
		if !resp.More {
			return n, nil
		}
	}
}
