package storetest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// testBeats: a beat is listed with what it said, when the store saw it
// and as live; the next beat of a replica replaces it whole; replicas are
// listed by name.
func testBeats(t *testing.T, s slotstore.Store) {
	if rs := replicas(t, s, "a new store"); len(rs) != 0 {
		t.Errorf("a new store lists replicas: %+v", rs)
	}
	started := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	first := slotstore.Beat{
		Replica: "r2", Incarnation: "i-1", Version: "v1.2.3", Started: started, Revision: 20261206,
		Duties: []slotstore.DutyTerm{
			{Name: "prune", Fence: 7, Since: started.Add(time.Second)},
			{Name: "{odd} duty", Fence: 1 << 40, Since: started.Add(time.Minute)},
		},
		TTL: longLease,
	}
	said := first
	said.Duties = slices.Clone(first.Duties)
	lo, hi := beat(t, s, first)
	first.Duties[0].Name = "changed after the beat" // the store keeps its own copy
	rs := replicas(t, s, "after one beat")
	if len(rs) != 1 {
		t.Fatalf("after one beat: replicas %+v, want r2", rs)
	}
	checkReplica(t, "after one beat", rs[0], said, lo, hi, true)
	rs[0].Duties[1].Name = "changed by a reader" // and hands out copies
	checkReplica(t, "read again", replicas(t, s, "read again")[0], said, lo, hi, true)

	// The next beat replaces the last, duties and revision and all.
	second := slotstore.Beat{Replica: "r2", Incarnation: "i-2", Version: "v1.3.0",
		Started: started.Add(30 * time.Minute), TTL: 2 * longLease}
	lo, hi = beat(t, s, second)
	rs = replicas(t, s, "after a second beat")
	if len(rs) != 1 {
		t.Fatalf("after a second beat: replicas %+v, want r2", rs)
	}
	checkReplica(t, "after a second beat", rs[0], second, lo, hi, true)

	// Replicas come sorted by name, whatever order they beat in; a beat
	// may leave every field but the name and TTL empty.
	third := slotstore.Beat{Replica: "r1", TTL: longLease}
	lo3, hi3 := beat(t, s, third)
	fourth := slotstore.Beat{Replica: "r10 {odd}:name", Version: "dev", TTL: longLease,
		Duties: []slotstore.DutyTerm{{Name: "elect", Fence: 1}}}
	lo4, hi4 := beat(t, s, fourth)
	rs = replicas(t, s, "after four beats of three replicas")
	if got := names(rs); !slices.Equal(got, []string{"r1", "r10 {odd}:name", "r2"}) {
		t.Fatalf("after four beats of three replicas: replicas %q, want r1, r10 {odd}:name, r2", got)
	}
	checkReplica(t, "r1", rs[0], third, lo3, hi3, true)
	checkReplica(t, "r10", rs[1], fourth, lo4, hi4, true)
	checkReplica(t, "r2 after the others beat", rs[2], second, lo, hi, true)
}

// testBeatLive: a beat stops being live once its TTL has passed by the
// store's clock, and is still listed; a newer beat makes it live again.
func testBeatLive(t *testing.T, s slotstore.Store) {
	short := slotstore.Beat{Replica: "short", TTL: shortLease}
	long := slotstore.Beat{Replica: "long", TTL: longLease}
	lo, hi := beat(t, s, short)
	beat(t, s, long)
	deadline := time.Now().Add(patience)
	for {
		rs := replicas(t, s, "while the short beat runs out")
		if got := names(rs); !slices.Equal(got, []string{"long", "short"}) {
			t.Fatalf("while the short beat runs out: replicas %q, want long and short", got)
		}
		if !rs[0].Live {
			t.Fatalf("the beat of %v went out before the one of %v: %+v", longLease, shortLease, rs)
		}
		if !rs[1].Live {
			checkReplica(t, "short after its TTL", rs[1], short, lo, hi, false)
			if passed := time.Since(lo); passed < shortLease-slack {
				t.Errorf("a beat of %v went out after %v", shortLease, passed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a beat of %v still live after %v: %+v", shortLease, patience, rs[1])
		}
		time.Sleep(10 * time.Millisecond)
	}
	again := slotstore.Beat{Replica: "short", TTL: longLease}
	lo, hi = beat(t, s, again)
	rs := replicas(t, s, "after the short replica beat again")
	if len(rs) != 2 {
		t.Fatalf("after the short replica beat again: replicas %+v", rs)
	}
	checkReplica(t, "short after beating again", rs[1], again, lo, hi, true)
}

// testBeatInvalid: a beat with no replica name, a name longer than 200
// bytes, or a TTL that is not positive fails with ErrInvalid and changes
// nothing.
func testBeatInvalid(t *testing.T, s slotstore.Store) {
	kept := slotstore.Beat{Replica: "r1", Version: "v1", TTL: longLease}
	lo, hi := beat(t, s, kept)
	for _, b := range []slotstore.Beat{
		{TTL: longLease},
		{Replica: strings.Repeat("r", 201), TTL: longLease},
		{Replica: strings.Repeat("é", 101), TTL: longLease}, // 202 bytes
		{Replica: "r2", Version: "v2"},
		{Replica: "r1", Version: "v2", TTL: -time.Second},
		{Replica: "r1", Version: "v2", TTL: 0},
	} {
		if err := s.Beat(t.Context(), b); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("beat of a %d-byte name with TTL %v: %v, want ErrInvalid", len(b.Replica), b.TTL, err)
		}
	}
	rs := replicas(t, s, "after invalid beats")
	if len(rs) != 1 {
		t.Fatalf("after invalid beats: replicas %q, want r1", names(rs))
	}
	checkReplica(t, "r1 after invalid beats", rs[0], kept, lo, hi, true)

	// The longest name, and the longest TTL, are valid.
	longest := slotstore.Beat{Replica: strings.Repeat("é", 100), TTL: longLease} // 200 bytes
	lo, hi = beat(t, s, longest)
	forever := slotstore.Beat{Replica: "forever", TTL: math.MaxInt64}
	lo2, hi2 := beat(t, s, forever)
	rs = replicas(t, s, "after beats of a 200-byte name and of the longest TTL")
	if len(rs) != 3 {
		t.Fatalf("after beats of a 200-byte name and of the longest TTL: replicas %q", names(rs))
	}
	checkReplica(t, "the longest TTL", rs[0], forever, lo2, hi2, true)
	checkReplica(t, "a 200-byte name", rs[2], longest, lo, hi, true)
}

// BeatKeep checks what Run cannot, since it cannot move a shared store's
// clock an hour on: that a beat whose TTL has run out is listed, not live,
// until slotstore.BeatKeep later by the store's clock, and is then listed
// no more. newStore returns a fresh, empty store whose clock is clock, a
// clock the test moves; it registers its own cleanup.
func BeatKeep(t *testing.T, newStore func(t *testing.T, clock func() time.Time) slotstore.Store) {
	t.Helper()
	var (
		mu  sync.Mutex
		now = time.Date(2100, 11, 29, 2, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	s := open(t, func(t *testing.T) slotstore.Store { return newStore(t, clock) })
	gone := slotstore.Beat{Replica: "gone", TTL: time.Minute}
	stays := slotstore.Beat{Replica: "stays", TTL: 2 * time.Hour}
	seen := clock()
	beat(t, s, gone)
	advance(30 * time.Second)
	beat(t, s, stays)
	want := func(what string, live ...bool) []slotstore.Replica {
		t.Helper()
		rs := replicas(t, s, what)
		wantNames := []string{"gone", "stays"}[2-len(live):]
		if got := names(rs); !slices.Equal(got, wantNames) {
			t.Fatalf("%s: replicas %q, want %q", what, got, wantNames)
		}
		for i, r := range rs {
			if r.Live != live[i] {
				t.Errorf("%s: %s live %v, want %v", what, r.Replica, r.Live, live[i])
			}
		}
		return rs
	}
	if rs := want("after both beat", true, true); !rs[0].Seen.Equal(seen) {
		t.Errorf("after both beat: gone seen %s, want the store's time %s", stamp(rs[0].Seen), stamp(seen))
	}
	advance(30*time.Second + time.Millisecond) // gone's TTL has passed
	want("once gone's TTL has passed", false, true)
	advance(slotstore.BeatKeep - time.Millisecond) // gone's TTL and BeatKeep, to the instant
	want("at the end of gone's BeatKeep", false, true)
	advance(time.Millisecond)
	want("after gone's BeatKeep", true)
	advance(time.Hour) // and stays's TTL
	want("later still", false)
	beat(t, s, stays)
	want("after stays beat again", true)
}

// beat records b, failing the test on an error, and returns the test's
// clock just before and after.
func beat(t *testing.T, s slotstore.Store, b slotstore.Beat) (lo, hi time.Time) {
	t.Helper()
	lo = time.Now()
	if err := s.Beat(t.Context(), b); err != nil {
		t.Fatalf("beat of %q: %v", b.Replica, err)
	}
	return lo, time.Now()
}

// replicas lists the replicas, failing the test on an error.
func replicas(t *testing.T, s slotstore.Store, what string) []slotstore.Replica {
	t.Helper()
	rs, err := s.Replicas(t.Context())
	if err != nil {
		t.Fatalf("%s: replicas: %v", what, err)
	}
	return rs
}

// names returns the names of rs, in order.
func names(rs []slotstore.Replica) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Replica
	}
	return out
}

// checkReplica fails the test unless r is what beat b says, seen between
// lo and hi, and live or not.
func checkReplica(t *testing.T, what string, r slotstore.Replica, b slotstore.Beat, lo, hi time.Time, live bool) {
	t.Helper()
	same := r.Replica == b.Replica && r.Incarnation == b.Incarnation && r.Version == b.Version &&
		r.Revision == b.Revision && r.Started.Equal(b.Started) && r.TTL == b.TTL && len(r.Duties) == len(b.Duties)
	for i := 0; same && i < len(b.Duties); i++ {
		g, w := r.Duties[i], b.Duties[i]
		same = g.Name == w.Name && g.Fence == w.Fence && g.Since.Equal(w.Since)
	}
	if !same {
		t.Errorf("%s: replica %+v, want beat %+v", what, r.Beat, b)
	}
	within(t, what+": Seen", r.Seen, lo, hi)
	if r.Live != live {
		t.Errorf("%s: live %v, want %v", what, r.Live, live)
	}
}
