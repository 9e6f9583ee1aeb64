package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The actions log is three keys that share the hash tag {<prefix>actions},
// so one script changes them together in a Cluster too:
//
//	<prefix>actions:head{<prefix>actions}    string  the last Seq given
//	<prefix>actions:log{<prefix>actions}     zset    seq -> the entry
//	<prefix>actions:expiry{<prefix>actions}  zset    at + retain (Unix ms) -> seq
//
// An entry is its sorted set member: '<seq> <at> ' (at in Unix ms, Redis's
// clock), then Who, Role, Via, Kind, Target, Reason, Result and Detail,
// each as '<length>:<bytes>', then Retain in nanoseconds.

// actionKey is the key of the log's part name.
func (s *Store) actionKey(name string) string {
	return s.prefix + "actions:" + name + "{" + s.prefix + "actions}"
}

// actionPage is how many members one read of Actions asks for when the
// request has filters, and one call of actionprune.lua deletes at most.
const actionPage = 500

// AppendAction implements slotstore.Store: one call of action.lua, which
// takes the next Seq from the counter and stores the entry and its expiry
// at Redis's time.
func (s *Store) AppendAction(ctx context.Context, a slotstore.Action) (slotstore.Action, error) {
	if err := rules.ValidateAction(a); err != nil {
		return slotstore.Action{}, err
	}
	if err := s.begin(ctx, "append action"); err != nil {
		return slotstore.Action{}, err
	}
	c := call{script: actionScript, keys: []string{s.actionKey("head"), s.actionKey("log"), s.actionKey("expiry")},
		args: []any{encodeAction(a), a.Retain.Milliseconds()}}
	res, err := s.runAll(ctx, []call{c})[0].Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("unexpected reply of %d values", len(res))
	}
	if err != nil {
		return slotstore.Action{}, s.fail("append action", err)
	}
	a.Seq, a.At = res[0], time.UnixMilli(res[1]).UTC()
	return a, nil
}

// Actions implements slotstore.Store: ZREVRANGEBYSCORE of the log back
// from Before, a page of members at a time, each decoded and filtered,
// until Limit entries are listed or the log ends.
func (s *Store) Actions(ctx context.Context, p slotstore.ActionsParams) ([]slotstore.Action, error) {
	p, err := rules.NormalizeActions(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "actions"); err != nil {
		return nil, err
	}
	page := p.Limit
	if p.Who != "" || p.Kind != "" || p.Target != "" || !p.Since.IsZero() {
		page = max(page, actionPage)
	}
	top := "+inf"
	if p.Before > 0 {
		top = "(" + strconv.FormatInt(p.Before, 10)
	}
	out := []slotstore.Action{}
	for len(out) < p.Limit {
		members, err := s.client.ZRevRangeByScore(ctx, s.actionKey("log"),
			&redis.ZRangeBy{Max: top, Min: "-inf", Count: int64(page)}).Result()
		if err != nil {
			return nil, s.failRead("actions", err)
		}
		for _, m := range members {
			a, err := decodeAction(m)
			if err != nil {
				return nil, fmt.Errorf("redisstore: actions: %w", err)
			}
			if rules.ActionListed(a, p) && len(out) < p.Limit {
				out = append(out, a)
			}
			top = "(" + strconv.FormatInt(a.Seq, 10)
		}
		if len(members) < page {
			break
		}
	}
	return out, nil
}

// pruneActions deletes the entries of the log past their retention, by
// calls of actionprune.lua of at most actionPage entries each, and
// returns how many.
func (s *Store) pruneActions(ctx context.Context) (int, error) {
	n := 0
	for {
		c := call{script: actionPruneScript, keys: []string{s.actionKey("log"), s.actionKey("expiry")}, args: []any{actionPage}}
		got, err := s.runAll(ctx, []call{c})[0].Int()
		if err != nil {
			return n, s.fail("prune actions", err)
		}
		if n += got; got < actionPage {
			return n, nil
		}
	}
}

// encodeAction encodes a's fields but Seq and At as the log keeps them.
func encodeAction(a slotstore.Action) string {
	var b strings.Builder
	for _, f := range []string{a.Who, a.Role, a.Via, a.Kind, a.Target, a.Reason, a.Result, a.Detail} {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	b.WriteString(strconv.FormatInt(int64(a.Retain), 10))
	return b.String()
}

// decodeAction decodes an entry of the log.
func decodeAction(m string) (slotstore.Action, error) {
	bad := func() (slotstore.Action, error) {
		return slotstore.Action{}, fmt.Errorf("malformed entry of the actions log %.80q", m)
	}
	seq, rest, ok1 := strings.Cut(m, " ")
	at, rest, ok2 := strings.Cut(rest, " ")
	n, err1 := strconv.ParseInt(seq, 10, 64)
	ms, err2 := strconv.ParseInt(at, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return bad()
	}
	a := slotstore.Action{Seq: n, At: time.UnixMilli(ms).UTC()}
	for _, f := range []*string{&a.Who, &a.Role, &a.Via, &a.Kind, &a.Target, &a.Reason, &a.Result, &a.Detail} {
		size, tail, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(size)
		if !ok || err != nil || n < 0 || n > len(tail) {
			return bad()
		}
		*f, rest = tail[:n], tail[n:]
	}
	ns, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return bad()
	}
	a.Retain = time.Duration(ns)
	return a, nil
}
