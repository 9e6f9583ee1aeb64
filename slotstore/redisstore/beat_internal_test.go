package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
)

// TestPausesBeforeNotes: pauses recorded before notes were kept (members
// of the pauses set with no note) still read, with no note, and get one
// when paused again.
func TestPausesBeforeNotes(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, Options{Addrs: []string{testserver.StartRedis(t).Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.client.SAdd(ctx, pausesKey(s.prefix), "", "j").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := s.Pauses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.All || len(p.Jobs) != 1 || p.Jobs[0] != "j" || p.Notes == nil || len(p.Notes) != 0 {
		t.Errorf("pauses from before notes: %+v, want the cluster and j, with no notes", p)
	}
	if err := s.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: true, By: "alice", Reason: "a b"}); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Pauses(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.Notes["j"]; !ok || n.By != "alice" || n.Reason != "a b" || n.At.IsZero() || len(p.Notes) != 1 {
		t.Errorf("after pausing j again: %+v, want a note by alice for j alone", p)
	}
}

// TestOldBeats: a beat whose TTL has passed is listed, not live, until
// BeatKeep after it; then Replicas leaves it out and deletes it, as does
// the next Beat of another replica; the hash of beats expires with the
// last beat it keeps. Redis's clock cannot be moved, so the test moves the
// beats back in time instead.
func TestOldBeats(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, Options{Addrs: []string{testserver.StartRedis(t).Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := beatsKey(s.prefix)
	beat := func(name string, ttl time.Duration) {
		t.Helper()
		if err := s.Beat(ctx, slotstore.Beat{Replica: name, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	// back moves the beat of name back by d.
	back := func(name string, d time.Duration) {
		t.Helper()
		v, err := s.client.HGet(ctx, key, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		f := strings.SplitN(v, " ", 3)
		for i := range 2 {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("beat %q: %v", v, err)
			}
			f[i] = strconv.FormatInt(n-d.Milliseconds(), 10)
		}
		if err := s.client.HSet(ctx, key, name, strings.Join(f, " ")).Err(); err != nil {
			t.Fatal(err)
		}
	}
	fields := func() []string {
		t.Helper()
		names, err := s.client.HKeys(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return names
	}

	beat("a", time.Minute)
	beat("b", time.Minute)
	back("a", slotstore.BeatKeep)                         // within BeatKeep
	back("b", time.Minute+slotstore.BeatKeep+time.Second) // past it
	rs, err := s.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Replica != "a" || rs[0].Live || time.Since(rs[0].Seen) < slotstore.BeatKeep {
		t.Errorf("with a within BeatKeep and b past it: replicas %+v, want a, not live, seen an hour ago", rs)
	}
	if got := fields(); len(got) != 1 || got[0] != "a" {
		t.Errorf("beats after Replicas met b past BeatKeep: %q, want a alone", got)
	}
	back("a", 2*time.Minute)
	beat("b", time.Second)
	if got := fields(); len(got) != 1 || got[0] != "b" {
		t.Errorf("beats after b beat with a past BeatKeep: %q, want b alone", got)
	}
	ttl, err := s.client.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > time.Second+slotstore.BeatKeep {
		t.Errorf("expiry of the hash of beats after the beat of b: %v, %v, want within b's TTL and BeatKeep", ttl, err)
	}
	beat("c", 2*time.Hour)
	if ttl, err = s.client.PTTL(ctx, key).Result(); err != nil || ttl <= 2*time.Hour {
		t.Errorf("expiry of the hash of beats after the beat of c: %v, %v, want c's TTL and BeatKeep", ttl, err)
	}
	beat("b", time.Second)
	if ttl, err = s.client.PTTL(ctx, key).Result(); err != nil || ttl <= 2*time.Hour {
		t.Errorf("expiry of the hash of beats after b beat again: %v, %v, want c's TTL and BeatKeep", ttl, err)
	}
}
