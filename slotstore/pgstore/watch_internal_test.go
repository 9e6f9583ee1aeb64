package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
)

// listener returns the backend pid of the session listening on s's
// channel, 0 for none.
func listener(t *testing.T, s *Store) int32 {
	t.Helper()
	var pid int32
	err := s.pool.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE query = $1`,
		"LISTEN "+quote(s.q.channel)).Scan(&pid)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// putUntilNotice writes schedule id until ch gives a notice.
func putUntilNotice(t *testing.T, s *Store, ch <-chan struct{}, id string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "t", Writes: []slotstore.ScheduleWrite{
			{ID: id, Run: "j", Spec: slotstore.Spec{Fingerprint: fmt.Sprintf("v%d", i)}, IfVersion: slotstore.AnyVersion}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("write %s: %v, %+v", id, err, res)
		}
		select {
		case _, open := <-ch:
			if !open {
				t.Fatal("the watch closed while its context lives")
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no notice of the writes of %s", id)
		}
	}
}

// TestWatchReconnects: a watch whose connection the server ends connects
// again by itself, tells of the cut with a notice, and hears the writes
// after it; its channel closes when its context ends.
func TestWatchReconnects(t *testing.T) {
	t.Parallel()
	s := internalStore(t, "watch")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := s.WatchSchedules(ctx)
	putUntilNotice(t, s, ch, "before")
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch: // a notice of a write before, coalesced or late
	default:
	}
	first := listener(t, s)
	if first == 0 {
		t.Fatal("no session listens on the schema's channel")
	}
	if _, err := s.pool.Exec(t.Context(), "SELECT pg_terminate_backend($1)", first); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the watch to listen again", func() error {
		if pid := listener(t, s); pid == 0 || pid == first {
			return errors.New("not yet")
		}
		return nil
	})
	select {
	case <-ch: // the notice of the cut
	case <-time.After(10 * time.Second):
		t.Fatal("no notice after the watch connected again")
	}
	putUntilNotice(t, s, ch, "after")
	cancel()
	select {
	case _, open := <-ch:
		if open {
			if _, open = <-ch; open {
				t.Fatal("a notice after the context ended, and the channel still open")
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel is still open after its context ended")
	}
	poll.Until(t, 10*time.Second, "the watch's session to end", func() error {
		if listener(t, s) != 0 {
			return errors.New("still listening")
		}
		return nil
	})
}

// TestWatchEndsWithClose: closing the store ends its watches.
func TestWatchEndsWithClose(t *testing.T) {
	t.Parallel()
	s := internalStore(t, "watchclose")
	s.stop = make(chan struct{})
	ch := s.WatchSchedules(t.Context())
	putUntilNotice(t, s, ch, "x")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the channel is still open after the store closed")
		}
	}
}

// TestPrefixRange: a prefix is the range of the IDs that begin with it.
func TestPrefixRange(t *testing.T) {
	for _, c := range []struct {
		prefix, lo, hi string
		ok             bool
	}{
		{"", "", "\x7f", true},
		{"t/", "t/", "t0", true},
		{"a~", "a~", "a\x7f", true},
		{"a b", "", "", false},
		{"é", "", "", false},
		{"a\x00", "", "", false},
	} {
		lo, hi, ok := prefixRange(c.prefix)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("prefixRange(%q) = %q, %q, %v; want %q, %q, %v", c.prefix, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}
