package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// beatsKey is the hash of the replicas' last beats, by replica. It has no
// hash tag: in a Cluster it lives on one master, and only Beat and
// Replicas touch it. It expires with the last beat it keeps.
func beatsKey(prefix string) string { return prefix + "beats" }

// beatBody is what a beat says, as the hash of beats holds it, in JSON
// after the times beat.lua writes.
type beatBody struct {
	Incarnation string           `json:"incarnation"`
	Version     string           `json:"version"`
	Started     time.Time        `json:"started"`
	Duties      []rules.DutyJSON `json:"duties"`
	TTL         int64            `json:"ttl_ns"`
	Revision    int64            `json:"revision,omitempty"`
}

// keepMillis is how long a beat of ttl is kept, its TTL and
// slotstore.BeatKeep, in whole milliseconds rounded up; it does not
// overflow for the longest TTL.
func keepMillis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms + slotstore.BeatKeep.Milliseconds()
}

// Beat implements slotstore.Store: one script, which records the beat at
// Redis's time and deletes those past their TTL and slotstore.BeatKeep.
func (s *Store) Beat(ctx context.Context, p slotstore.Beat) error {
	if err := rules.ValidateBeat(p); err != nil {
		return err
	}
	body := beatBody{Incarnation: p.Incarnation, Version: p.Version, Started: p.Started.UTC(),
		Duties: rules.DutiesJSON(p.Duties), TTL: int64(p.TTL), Revision: p.Revision}
	js, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("redisstore: beat of %q: encode: %w", p.Replica, err)
	}
	op := fmt.Sprintf("beat of %q", p.Replica)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	c := call{script: beatScript, keys: []string{beatsKey(s.prefix)}, args: []any{p.Replica, keepMillis(p.TTL), string(js)}}
	if err := s.runAll(ctx, []call{c})[0].Err(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Replicas implements slotstore.Store: one script, which lists the beats
// and deletes those past their TTL and slotstore.BeatKeep.
func (s *Store) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	if err := s.begin(ctx, "replicas"); err != nil {
		return nil, err
	}
	c := call{script: replicasScript, keys: []string{beatsKey(s.prefix)}}
	res, err := s.runAll(ctx, []call{c})[0].Result()
	if err != nil {
		return nil, s.failRead("replicas", err)
	}
	r, n, err := newReply(res, 1)
	if err == nil && n%2 == 0 {
		err = fmt.Errorf("unexpected script reply of %d values", n)
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: replicas: %w", err)
	}
	now := r.millis()
	out := make([]slotstore.Replica, 0, n/2)
	for range n / 2 {
		name, v := r.str(), r.str()
		rep, err := parseBeat(name, v)
		if err != nil {
			return nil, fmt.Errorf("redisstore: replicas: beat of %q: %w", name, err)
		}
		rep.Live = !now.After(rep.Seen.Add(rep.TTL))
		out = append(out, rep)
	}
	if r.err != nil {
		return nil, fmt.Errorf("redisstore: replicas: %w", r.err)
	}
	slices.SortFunc(out, func(a, b slotstore.Replica) int { return strings.Compare(a.Replica, b.Replica) })
	return out, nil
}

// parseBeat reads the beat of replica as beat.lua records it.
func parseBeat(replica, v string) (slotstore.Replica, error) {
	seen, rest, ok1 := strings.Cut(v, " ")
	_, js, ok2 := strings.Cut(rest, " ")
	ms, err := strconv.ParseInt(seen, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return slotstore.Replica{}, fmt.Errorf("malformed beat %q", v)
	}
	var body beatBody
	if err := json.Unmarshal([]byte(js), &body); err != nil {
		return slotstore.Replica{}, fmt.Errorf("malformed beat %q: %w", v, err)
	}
	out := slotstore.Replica{Beat: slotstore.Beat{Replica: replica, Incarnation: body.Incarnation,
		Version: body.Version, Started: body.Started, TTL: time.Duration(body.TTL), Revision: body.Revision}, Seen: time.UnixMilli(ms).UTC()}
	out.Duties = rules.Duties(body.Duties)
	return out, nil
}
