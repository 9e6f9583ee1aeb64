package sqlitestore

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// TestMigrateFromVersion2: pauses recorded before notes were kept still
// read, with no note, and get one when paused again; the file takes beats.
func TestMigrateFromVersion2(t *testing.T) {
	path := oldFile(t, 2, "INSERT INTO pauses (job) VALUES (''), ('j')")
	s, err := Open(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	p, err := s.Pauses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.All || len(p.Jobs) != 1 || p.Jobs[0] != "j" || p.Notes == nil || len(p.Notes) != 0 {
		t.Errorf("pauses from before notes: %+v, want the cluster and j, with no notes", p)
	}
	if err := s.SetPause(ctx, slotstore.PauseParams{Job: "j", Paused: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Pauses(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.Notes["j"]; !ok || n.By != "alice" || n.At.IsZero() || len(p.Notes) != 1 {
		t.Errorf("after pausing j again: %+v, want a note by alice for j alone", p)
	}
	if err := s.Beat(ctx, slotstore.Beat{Replica: "r", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.Replicas(ctx); err != nil || len(rs) != 1 || rs[0].Replica != "r" {
		t.Errorf("replicas after a beat: %+v, %v", rs, err)
	}
}

// TestOldBeatsDeleted: a beat past its TTL and slotstore.BeatKeep is
// deleted from the file by the next Replicas, or the next Beat of another
// replica, not only left out of the list.
func TestOldBeatsDeleted(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC)
	)
	s, err := Open(t.Context(), Options{Path: filepath.Join(t.TempDir(), "slots.db"), Clock: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	ctx := t.Context()
	rows := func() []string {
		t.Helper()
		rs, err := s.conn().QueryContext(ctx, "SELECT replica FROM beats ORDER BY replica")
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var r string
			if err := rs.Scan(&r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	beat := func(name string) {
		t.Helper()
		if err := s.Beat(ctx, slotstore.Beat{Replica: name, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	beat("a")
	beat("b")
	advance(time.Minute + slotstore.BeatKeep + time.Millisecond)
	if _, err := s.Replicas(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 0 {
		t.Errorf("rows after Replicas met old beats: %q, want none", got)
	}
	beat("a")
	advance(time.Minute + slotstore.BeatKeep + time.Millisecond)
	beat("b")
	if got := rows(); len(got) != 1 || got[0] != "b" {
		t.Errorf("rows after b beat past a's BeatKeep: %q, want b alone", got)
	}
}
