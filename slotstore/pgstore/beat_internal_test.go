package pgstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigratePauseNotes: pauses recorded by a version 6 build still read
// after the upgrade, with no note, as do those its replicas record during
// a rolling upgrade; pausing again records a note.
func TestMigratePauseNotes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := oldStore(t, "v6pauses", 6)
	oldPause := `INSERT INTO ` + quote(s.schema) + `.pauses (job) VALUES ($1) ON CONFLICT DO NOTHING`
	if _, err := s.pool.Exec(ctx, oldPause, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatalf("migrate from version 6: %v", err)
	}
	if _, err := s.pool.Exec(ctx, oldPause, "j"); err != nil {
		t.Fatalf("a version 6 pause after the upgrade: %v", err)
	}
	p, err := s.Pauses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.All || len(p.Jobs) != 1 || p.Jobs[0] != "j" || p.Notes == nil || len(p.Notes) != 0 {
		t.Errorf("pauses from version 6: %+v, want the cluster and j, with no notes", p)
	}
	if err := s.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: true, By: "alice", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Pauses(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.Notes["j"]; !ok || n.By != "alice" || n.Reason != "r" || n.At.IsZero() || len(p.Notes) != 1 {
		t.Errorf("after pausing j again: %+v, want a note by alice for j alone", p)
	}
}

// TestOldBeats: a beat whose TTL has passed is listed, not live, until
// BeatKeep after it; then Replicas leaves it out and deletes it, as does
// the next Beat of another replica. The database's clock cannot be moved,
// so the test moves the beats back in time instead.
func TestOldBeats(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := internalStore(t, "beats")
	beat := func(name string) {
		t.Helper()
		if err := s.Beat(ctx, slotstore.Beat{Replica: name, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	// back moves the beat of name back by d.
	back := func(name string, d time.Duration) {
		t.Helper()
		_, err := s.pool.Exec(ctx, `UPDATE `+quote(s.schema)+`.replicas
			SET seen = seen - $2::bigint * interval '1 microsecond', keep_until = keep_until - $2::bigint * interval '1 microsecond'
			WHERE replica = $1`, name, d.Microseconds())
		if err != nil {
			t.Fatal(err)
		}
	}
	rows := func() []string {
		t.Helper()
		var out []string
		rs, err := s.pool.Query(ctx, `SELECT replica FROM `+quote(s.schema)+`.replicas ORDER BY replica`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var r string
			if err := rs.Scan(&r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	list := func(what string) []slotstore.Replica {
		t.Helper()
		rs, err := s.Replicas(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return rs
	}

	beat("a")
	beat("b")
	back("a", time.Minute+slotstore.BeatKeep-time.Minute) // within BeatKeep
	back("b", time.Minute+slotstore.BeatKeep+time.Second) // past it
	rs := list("with a within BeatKeep and b past it")
	if len(rs) != 1 || rs[0].Replica != "a" || rs[0].Live || time.Since(rs[0].Seen) < slotstore.BeatKeep-time.Minute {
		t.Errorf("with a within BeatKeep and b past it: replicas %+v, want a, not live, seen an hour ago", rs)
	}
	if got := rows(); len(got) != 1 || got[0] != "a" {
		t.Errorf("rows after Replicas met b past BeatKeep: %q, want a alone", got)
	}
	back("a", 2*time.Minute)
	beat("b")
	if got := rows(); len(got) != 1 || got[0] != "b" {
		t.Errorf("rows after b beat with a past BeatKeep: %q, want b alone", got)
	}
	if rs := list("after b beat again"); len(rs) != 1 || rs[0].Replica != "b" || !rs[0].Live {
		t.Errorf("after b beat again: replicas %+v, want b, live", rs)
	}
}

// TestBeatsConcurrently: replicas that come back together, each beat
// deleting the others' old rows while they replace them, and Replicas
// beside them, never fail (a deadlock would abort one of them), and every
// replica is listed, live, after.
func TestBeatsConcurrently(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := internalStore(t, "beatsrace")
	const replicas = 8
	name := func(i int) string { return fmt.Sprintf("r%d", i) }
	for round := range 100 {
		for i := range replicas {
			if err := s.Beat(ctx, slotstore.Beat{Replica: name(i), TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, `UPDATE `+quote(s.schema)+`.replicas
			SET seen = seen - interval '2 hours', keep_until = keep_until - interval '2 hours'`); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*replicas)
		for i := range replicas {
			wg.Go(func() {
				errs <- s.Beat(ctx, slotstore.Beat{Replica: name(i), TTL: time.Minute})
			})
			wg.Go(func() {
				_, err := s.Replicas(ctx)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		rs, err := s.Replicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != replicas {
			t.Fatalf("round %d: replicas %+v, want all %d", round, rs, replicas)
		}
		for _, r := range rs {
			if !r.Live {
				t.Errorf("round %d: %s not live after it beat", round, r.Replica)
			}
		}
	}
}
