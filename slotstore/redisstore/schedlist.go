package redisstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// Schedules implements slotstore.Store. With p.IDs it reads those entries,
// one pipeline of catalog.lua calls. Otherwise it reads a page of IDs from
// the index of live schedules, or of those of p.Run, by ZRANGEBYLEX from
// p.Prefix or p.After (O(log N + page)), then their entries in one
// pipeline: two round trips, more only when entries read no longer match
// (a write between the two reads, or in a Cluster one the indexes do not
// show yet), which are left out and the page read on.
func (s *Store) Schedules(ctx context.Context, p slotstore.ScheduleParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeSchedules(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "schedules"); err != nil {
		return nil, err
	}
	if len(p.IDs) > 0 {
		got, err := s.entries(ctx, rules.IDs(p))
		if err != nil {
			return nil, err
		}
		return listed(nil, got, p), nil
	}
	key := s.schedKey("live")
	if p.Run != "" {
		key = s.runKey(p.Run)
	}
	from, to := "-", "+"
	if p.Prefix != "" {
		from, to = "["+p.Prefix, "("+p.Prefix+"\x7f" // IDs are printable ASCII, below 0x7f
	}
	if p.After != "" && p.After >= p.Prefix {
		from = "(" + p.After
	}
	var out []slotstore.CatalogEntry
	for len(out) < p.Limit {
		want := p.Limit - len(out)
		ids, err := s.client.ZRangeByLex(ctx, key, &redis.ZRangeBy{Min: from, Max: to, Count: int64(want)}).Result()
		if err != nil {
			return nil, s.failRead("schedules: list their ids", err)
		}
		got, err := s.entries(ctx, ids)
		if err != nil {
			return nil, err
		}
		out = listed(out, got, p)
		if len(ids) < want {
			break
		}
		from = "(" + ids[len(ids)-1]
	}
	return out, nil
}

// listed appends to out the entries of got that p lists, up to p.Limit.
func listed(out, got []slotstore.CatalogEntry, p slotstore.ScheduleParams) []slotstore.CatalogEntry {
	if out == nil {
		out = make([]slotstore.CatalogEntry, 0, min(len(got), p.Limit))
	}
	for _, e := range got {
		if len(out) < p.Limit && rules.Listed(e, p) {
			out = append(out, e)
		}
	}
	return out
}

// ScheduleChanges implements slotstore.Store: one MULTI/EXEC on the
// indexes' hash slot reads the page of IDs by sequence number above
// p.After (ZRANGEBYSCORE, O(log N + page)) and the counter, so a reader
// with nothing new pays one round trip and reads nothing else; a page of
// changes costs one pipeline of catalog.lua calls more. Each entry is
// answered with the sequence number the index gives it (the same as its
// own on a single server; in a Cluster its own may lag, doc.go). An ID
// whose entry is gone (a Cluster master that lost its data) is left out
// and the page read on, so a short page still means the end of the feed.
func (s *Store) ScheduleChanges(ctx context.Context, p slotstore.ChangesParams) (slotstore.Changes, error) {
	p, err := rules.NormalizeChanges(p)
	if err != nil {
		return slotstore.Changes{}, err
	}
	if err := s.begin(ctx, "schedule changes"); err != nil {
		return slotstore.Changes{}, err
	}
	var out slotstore.Changes
	for after := p.After; len(out.Entries) < p.Limit; {
		want := p.Limit - len(out.Entries)
		zs, head, err := s.changed(ctx, after, want)
		if err != nil {
			return slotstore.Changes{}, err
		}
		out.Head = head
		if len(zs) == 0 {
			break
		}
		ids := make([]string, len(zs))
		seq := make(map[string]int64, len(zs))
		for i, z := range zs {
			ids[i], _ = z.Member.(string)
			seq[ids[i]] = int64(z.Score)
		}
		got, err := s.entries(ctx, ids)
		if err != nil {
			return slotstore.Changes{}, err
		}
		for _, e := range got {
			e.Seq = seq[e.Job]
			out.Entries = append(out.Entries, e)
		}
		if len(zs) < want {
			break
		}
		after = int64(zs[len(zs)-1].Score)
	}
	return out, nil
}

// changed reads, in one MULTI/EXEC, up to limit IDs of the sequence index
// with a number above after, in ascending order, and the counter.
func (s *Store) changed(ctx context.Context, after int64, limit int) ([]redis.Z, int64, error) {
	var rows *redis.ZSliceCmd
	var head *redis.StringCmd
	_, err := s.client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		rows = pipe.ZRangeByScoreWithScores(ctx, s.schedKey("seq"), &redis.ZRangeBy{
			Min: "(" + strconv.FormatInt(after, 10), Max: "+inf", Count: int64(limit)})
		head = pipe.Get(ctx, s.schedKey("head"))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, s.failRead("schedule changes: read the index", err)
	}
	var n int64
	if h, err := head.Result(); err == nil {
		if n, err = strconv.ParseInt(h, 10, 64); err != nil {
			return nil, 0, s.failRead("schedule changes: read the counter", err)
		}
	}
	return rows.Val(), n, nil
}
