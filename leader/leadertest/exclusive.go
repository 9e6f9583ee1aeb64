package leadertest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// testOneLeader has campaigners contend for one name while terms hand
// over again and again, some by resigning and some by running into the
// next campaigner's win, and checks that no two terms are ever live at
// once and that fences grow in term order.
func testOneLeader(t *testing.T, h Harness) {
	const (
		campaigners = 4
		want        = 12
	)
	name := nameFor(t)
	var (
		active  atomic.Int32
		mu      sync.Mutex
		terms   []leader.Term
		enough  = make(chan struct{})
		overlap atomic.Int32
	)
	fn := func(ctx context.Context, term leader.Term) {
		if n := active.Add(1); n > 1 {
			overlap.Store(n)
		}
		mu.Lock()
		terms = append(terms, term)
		if len(terms) == want {
			close(enough)
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+rand.IntN(30)) * time.Millisecond):
		}
		active.Add(-1)
	}
	var cs []*campaign
	for i := range campaigners {
		p := leader.Params{Name: name, Replica: string(rune('A' + i)), Lease: 300 * time.Millisecond, Cooldown: 20 * time.Millisecond}
		cs = append(cs, lead(t, h.New(t, newWatch().logger()), p, fn))
	}
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
		mu.Lock()
		n := len(terms)
		mu.Unlock()
		t.Fatalf("only %d terms in 20s, want %d", n, want)
	}
	for _, c := range cs {
		c.stop(t)
	}
	if n := overlap.Load(); n > 1 {
		t.Fatalf("%d terms were live at once", n)
	}
	mu.Lock()
	defer mu.Unlock()
	replicas := map[string]bool{}
	for i, term := range terms {
		replicas[term.Replica] = true
		if i > 0 && term.Fence <= terms[i-1].Fence {
			t.Errorf("term %d (%s) has fence %d, not above term %d's %d", i, term.Replica, term.Fence, i-1, terms[i-1].Fence)
		}
	}
	if len(replicas) < 2 {
		t.Errorf("only %v ever led; leadership never changed hands", replicas)
	}
}
