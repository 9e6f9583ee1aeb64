package redisstore

import (
	"context"
	"fmt"
	"sort"

	"github.com/slotcron/slotcron/slotstore"
)

// pausesKey is the set of what is paused: job names, and the empty string
// for the whole cluster. It has no hash tag: in a Cluster it lives on one
// master, apart from every job, and only SetPause and Pauses touch it.
func pausesKey(prefix string) string { return prefix + "pauses" }

// SetPause implements slotstore.Store: one SADD or SREM.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	op := fmt.Sprintf("set pause of %q", p.Job)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	var err error
	if p.Paused {
		err = s.client.SAdd(ctx, pausesKey(s.prefix), p.Job).Err()
	} else {
		err = s.client.SRem(ctx, pausesKey(s.prefix), p.Job).Err()
	}
	if err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Pauses implements slotstore.Store: one SMEMBERS.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}}
	if err := s.begin(ctx, "pauses"); err != nil {
		return out, err
	}
	members, err := s.client.SMembers(ctx, pausesKey(s.prefix)).Result()
	if err != nil {
		return out, s.failRead("pauses", err)
	}
	for _, job := range members {
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
	}
	sort.Strings(out.Jobs)
	return out, nil
}
