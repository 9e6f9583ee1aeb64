package redisstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// pausesKey is the set of what is paused: job names, and the empty string
// for the whole cluster. It has no hash tag: in a Cluster it lives on one
// master, apart from every job, and only SetPause and Pauses touch it.
func pausesKey(prefix string) string { return prefix + "pauses" }

// notesKey is the hash of the notes of what is paused, by job. Its hash
// tag is the whole pauses key, which has none, so the two keys share a
// hash slot and one script changes both.
func notesKey(prefix string) string { return prefix + "pausenotes{" + pausesKey(prefix) + "}" }

// SetPause implements slotstore.Store: one script, which adds the job to
// the set of pauses and records its note at Redis's time, or removes both.
func (s *Store) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	if err := rules.ValidatePause(p); err != nil {
		return err
	}
	op := fmt.Sprintf("set pause of %q", p.Job)
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	args := []any{p.Job, "0", "", ""}
	if p.Paused {
		args = []any{p.Job, "1", p.By, p.Reason}
	}
	c := call{script: pauseScript, keys: []string{pausesKey(s.prefix), notesKey(s.prefix)}, args: args}
	if err := s.runAll(ctx, []call{c})[0].Err(); err != nil {
		return s.fail(op, err)
	}
	return nil
}

// Pauses implements slotstore.Store: one script call, which lists what is
// paused with each pause's note. A pause recorded before notes were kept
// has none.
func (s *Store) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	out := slotstore.Pauses{Jobs: []string{}, Notes: map[string]slotstore.PauseNote{}}
	if err := s.begin(ctx, "pauses"); err != nil {
		return out, err
	}
	c := call{script: pausesScript, keys: []string{pausesKey(s.prefix), notesKey(s.prefix)}}
	res, err := s.runAll(ctx, []call{c})[0].Result()
	if err != nil {
		return out, s.failRead("pauses", err)
	}
	r, n, err := newReply(res, 2)
	if err != nil {
		return out, fmt.Errorf("redisstore: pauses: %w", err)
	}
	for range n {
		job, v := r.str(), r.str()
		if job == "" {
			out.All = true
		} else {
			out.Jobs = append(out.Jobs, job)
		}
		if v == "" {
			continue
		}
		note, err := parseNote(v)
		if err != nil {
			return out, fmt.Errorf("redisstore: pauses: note of %q: %w", job, err)
		}
		out.Notes[job] = note
	}
	if r.err != nil {
		return out, fmt.Errorf("redisstore: pauses: %w", r.err)
	}
	sort.Strings(out.Jobs)
	return out, nil
}

// parseNote reads a note as pause.lua records it.
func parseNote(v string) (slotstore.PauseNote, error) {
	at, rest, ok1 := strings.Cut(v, " ")
	size, rest, ok2 := strings.Cut(rest, " ")
	ms, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.Atoi(size)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || n < 0 || n > len(rest) {
		return slotstore.PauseNote{}, fmt.Errorf("malformed note %q", v)
	}
	return slotstore.PauseNote{By: rest[:n], Reason: rest[n:], At: time.UnixMilli(ms).UTC()}, nil
}
