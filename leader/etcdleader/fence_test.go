package etcdleader_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// handOvers runs three campaigners for one name, each with a client of
// every member, whose terms resign after a few milliseconds, so the term
// passes from one to another again and again. It records every term.
type handOvers struct {
	mu    sync.Mutex
	terms []leader.Term
	began chan struct{} // a term began
}

func startHandOvers(t *testing.T, c *testserver.EtcdCluster) *handOvers {
	h := &handOvers{began: make(chan struct{}, 1)}
	prefix := newPrefix()
	for _, r := range []string{"A", "B", "C"} {
		e := elector(t, newClient(t, c.Endpoints()...), etcdleader.Options{Prefix: prefix, Logger: quiet})
		p := leader.Params{Name: "fanout", Replica: r, Lease: 500 * time.Millisecond, Cooldown: 20 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := e.Lead(ctx, p, h.fn); err != nil {
				t.Errorf("Lead: %v", err)
			}
		})
		t.Cleanup(func() {
			cancel()
			wg.Wait()
		})
	}
	return h
}

func (h *handOvers) fn(ctx context.Context, term leader.Term) {
	h.mu.Lock()
	h.terms = append(h.terms, term)
	h.mu.Unlock()
	select {
	case h.began <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Millisecond):
	}
}

func (h *handOvers) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.terms)
}

// await waits until n more terms than now have begun, or fails t.
func (h *handOvers) await(t *testing.T, n int, what string) {
	t.Helper()
	want := h.count() + n
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d more terms: %s", n, what), func() error {
		if got := h.count(); got < want {
			return fmt.Errorf("%d began", got-want+n)
		}
		return nil
	})
}

// check fails t unless the fences grow in the order the terms began.
func (h *handOvers) check(t *testing.T) []leader.Term {
	t.Helper()
	h.mu.Lock()
	terms := slices.Clone(h.terms)
	h.mu.Unlock()
	slices.SortFunc(terms, func(a, b leader.Term) int { return a.Start.Compare(b.Start) })
	for i := 1; i < len(terms); i++ {
		if terms[i].Fence <= terms[i-1].Fence {
			t.Errorf("term %d (%s, fence %d) began after term %d (%s, fence %d)",
				i, terms[i].Replica, terms[i].Fence, i-1, terms[i-1].Replica, terms[i-1].Fence)
		}
	}
	return terms
}

// Fences grow across many hand-overs and across the loss of etcd's leader:
// it is killed while terms pass, terms go on under the new leader, and the
// killed member restarts with its data and rejoins, serving linearizable
// reads that see every fence issued.
func TestFencesAcrossLeaderKill(t *testing.T) {
	c := cluster(t)
	h := startHandOvers(t, c)
	h.await(t, 20, "before the kill")
	select { // a stale signal
	case <-h.began:
	default:
	}
	<-h.began // a term is under way
	m := c.Leader()
	if m == nil {
		t.Fatal("the cluster has no leader")
	}
	m.Kill()
	t.Cleanup(func() { _ = m.Restart() }) // for the tests after this one, if it fails
	killedAt := h.count()
	h.await(t, 20, "after killing etcd's leader "+m.Name())
	if err := m.Restart(); err != nil {
		t.Fatalf("restart %s: %v", m.Name(), err)
	}
	h.await(t, 20, "after restarting "+m.Name())
	terms := h.check(t)
	last := terms[len(terms)-1].Fence

	// The restarted member serves a linearizable read at or past the last
	// fence: it rejoined and caught up.
	rc := newClient(t, m.ClientURL())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := rc.Get(ctx, "any")
	if err != nil {
		t.Fatalf("linearizable read through the restarted member: %v", err)
	}
	if resp.Header.Revision < last {
		t.Errorf("the restarted member reads at revision %d, below the last fence %d", resp.Header.Revision, last)
	}
	t.Logf("%d terms, %d before the kill of %s; fences %d to %d", len(terms), killedAt, m.Name(), terms[0].Fence, last)
}
