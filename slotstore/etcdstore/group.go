package etcdstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fenced mutations of different slots go to etcd together: one that comes
// while another's transaction is out waits for it, and those waiting then
// go in one transaction (a group commit), so a burst of runs ending at
// once (every job of a second, no-ops that end within a millisecond) is a
// few transactions, not one each. A lone mutation goes at once, as its own
// transaction. One that has waited groupPatience without being taken goes
// itself, with those waiting, beside the transaction out: one stuck on a
// member that does not answer holds no other back for longer.
//
// The group's transaction compares every member's marker and writes every
// member's keys; its Else reads every member's marker. When it fails, the
// Else tells each member whether its own compare held, at the revision the
// compares were judged at: a member whose compare failed gets its marker
// back, as its own transaction's Else would have given it, and one whose
// compare held goes in the next group. At least one member's failed, so
// every round answers one. An error (the transaction unanswered, refused)
// is every member's, which each handles as its own transaction's: a
// transaction sent again compares the same ModRevision, so one that
// landed is seen, whatever it was sent with.

// groupPatience is how long a mutation waits for the transaction out
// before it goes itself.
const groupPatience = 50 * time.Millisecond

// group is the mutations waiting for a transaction, and how many of their
// callers are sending.
type group struct {
	mu      sync.Mutex
	pending []*grouped
	leaders int
}

// grouped is one mutation's transaction: it compares key's ModRevision
// with mod, writes order, and reads key back when the compare fails.
type grouped struct {
	ctx    context.Context
	op     string
	key    string
	mod    int64
	order  []string
	writes map[string]write
	// wake is signalled once the mutation is answered (answered set), or
	// when its caller is to send the pending mutations (lead set).
	wake     chan struct{}
	answered bool
	lead     bool
	resp     *clientv3.TxnResponse
	err      error
}

// commitGrouped sends g's transaction with the others pending and returns
// its answer as its own transaction's would be: Succeeded and the header,
// or, when its compare failed, its marker as Responses[0]. When g's
// context ends while its transaction is out with another's, it returns the
// context's error: whether it landed is unknown, as for a request of its
// own.
func (s *Store) commitGrouped(g *grouped) (*clientv3.TxnResponse, error) {
	g.wake = make(chan struct{}, 1)
	gr := &s.group
	gr.mu.Lock()
	gr.pending = append(gr.pending, g)
	lead := gr.leaders == 0
	if lead {
		gr.leaders++
		g.lead = true
	}
	gr.mu.Unlock()
	for {
		if !lead {
			var err error
			if lead, err = s.waitGroup(g); err != nil {
				return nil, err
			}
			if !lead {
				return g.resp, g.err
			}
		}
		if s.sendGroups(g) {
			return g.resp, g.err
		}
		lead = false // it went with another caller's transaction: wait for that
	}
}

// waitGroup waits until g is answered, and reports false, or until its
// caller is to send, and reports true: handed the sending by a caller that
// sent, or once g has waited groupPatience pending (patience counts anew
// each time it comes back from a transaction that failed on another's
// compare). It returns g's context's error when that ends while g is out
// in another caller's transaction; while g is pending, it answers g not
// sent.
func (s *Store) waitGroup(g *grouped) (bool, error) {
	gr := &s.group
	t := time.NewTimer(groupPatience)
	defer t.Stop()
	patient := false
	for {
		select {
		case <-g.wake:
		case <-t.C:
			patient = true
		case <-g.ctx.Done():
		}
		gr.mu.Lock()
		pending := slices.Contains(gr.pending, g)
		switch {
		case g.answered:
			if g.lead {
				g.lead = false
				gr.resign() // handed the sending, but sent with another's
			}
			gr.mu.Unlock()
			return false, nil
		case g.lead:
			gr.mu.Unlock()
			return true, nil
		case g.ctx.Err() != nil && pending:
			gr.pending = slices.DeleteFunc(gr.pending, func(o *grouped) bool { return o == g })
			g.answered, g.err = true, unsent(g.ctx.Err())
			gr.mu.Unlock()
			return false, nil
		case g.ctx.Err() != nil:
			gr.mu.Unlock()
			return false, context.Cause(g.ctx)
		case pending && patient:
			gr.leaders++
			g.lead = true
			gr.mu.Unlock()
			return true, nil
		case patient:
			patient = false
			t.Reset(groupPatience)
		}
		gr.mu.Unlock()
	}
}

// resign ends one caller's sending: the oldest pending mutation's caller
// sends next, unless another caller is sending. The caller holds the
// group's lock.
func (gr *group) resign() {
	if len(gr.pending) > 0 && gr.leaders == 1 {
		next := gr.pending[0]
		next.lead = true
		next.signal()
		return
	}
	gr.leaders--
}

// signal wakes g's caller to look again at what became of it.
func (g *grouped) signal() {
	select {
	case g.wake <- struct{}{}:
	default: // a wake it has not taken yet will do
	}
}

// sendGroups sends the pending mutations, oldest first, a group a
// transaction, until own is answered, and reports true; or, when own went
// with another caller's transaction, still out, reports false. Either way
// it hands the sending on to the oldest still pending, unless another
// caller sends, so no caller sends for others for long, and none waits
// for a caller that does not send.
func (s *Store) sendGroups(own *grouped) bool {
	gr := &s.group
	for {
		gr.mu.Lock()
		members := []*grouped(nil)
		if !own.answered {
			members = s.takeGroup()
		}
		if len(members) == 0 {
			own.lead = false
			gr.resign()
			gr.mu.Unlock()
			return own.answered
		}
		gr.mu.Unlock()
		retry := s.sendGroup(members)
		gr.mu.Lock()
		gr.pending = append(retry, gr.pending...)
		for _, m := range members {
			if !slices.Contains(retry, m) {
				m.answered = true
			}
			if m != own {
				m.signal() // answered, or pending again
			}
		}
		gr.mu.Unlock()
	}
}

// takeGroup takes from the pending mutations, oldest first, those one
// transaction holds: within the store's operations and bytes, no key
// twice. A mutation whose caller's context has ended is answered as never
// sent. The caller holds the group's lock.
func (s *Store) takeGroup() []*grouped {
	gr := &s.group
	var members, rest []*grouped
	seen := map[string]bool{}
	writes, bytes := 0, 0
	for _, g := range gr.pending {
		if err := g.ctx.Err(); err != nil {
			g.answered, g.err = true, unsent(err)
			members = append(members, g) // answered, not sent
			continue
		}
		size := 0
		for _, k := range g.order {
			size += len(k) + len(g.writes[k].value)
		}
		fits := len(members) == 0 || (writes+len(g.order) <= s.maxOps && bytes+size <= maxTxnBytes)
		clash := false
		for _, k := range g.order {
			clash = clash || seen[k]
		}
		if !fits || clash {
			rest = append(rest, g)
			continue
		}
		for _, k := range g.order {
			seen[k] = true
		}
		writes, bytes = writes+len(g.order), bytes+size
		members = append(members, g)
	}
	gr.pending = rest
	return members
}

// sendGroup sends one transaction of the members not yet answered and
// sets each one's answer, but those whose compare held in a transaction
// another member's failed: it returns those, to go again. The caller marks
// the others answered, under the group's lock.
func (s *Store) sendGroup(members []*grouped) (retry []*grouped) {
	var live []*grouped
	for _, g := range members {
		if !g.answered {
			live = append(live, g)
		}
	}
	if len(live) == 0 {
		return nil
	}
	ctx, cancel := groupContext(live)
	defer cancel()
	var (
		cmps   []clientv3.Cmp
		order  []string
		els    []clientv3.Op
		writes = map[string]write{}
	)
	for _, g := range live {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(g.key), "=", g.mod))
		order = append(order, g.order...)
		for k, w := range g.writes {
			writes[k] = w
		}
		els = append(els, clientv3.OpGet(g.key))
	}
	resp, err := s.commit(ctx, live[0].op, cmps, order, writes, els)
	for i, g := range live {
		switch {
		case err != nil:
			g.err = err
		case resp.Succeeded:
			g.resp = &clientv3.TxnResponse{Header: resp.Header, Succeeded: true}
		default:
			got := resp.Responses[i]
			if held(got, g.mod) {
				retry = append(retry, g)
				continue
			}
			g.resp = &clientv3.TxnResponse{Header: resp.Header, Responses: []*etcdserverpb.ResponseOp{got}}
		}
	}
	return retry
}

// held reports whether a compare of a key's ModRevision with mod held,
// given the key as the Else read it.
func held(got *etcdserverpb.ResponseOp, mod int64) bool {
	kvs := got.GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return mod == 0
	}
	return kvs[0].ModRevision == mod
}

// groupContext is the context of a group's transaction: it ends at the
// latest deadline of its members (none if one has none), and is not
// cancelled with any one of them, whose mutation the others' transaction
// carries: a member whose context ends meanwhile learns so on its own
// (waitGroup), and the others' mutations still go.
func groupContext(members []*grouped) (context.Context, context.CancelFunc) {
	var deadline time.Time
	for _, g := range members {
		d, ok := g.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(members[0].ctx))
		}
		if d.After(deadline) {
			deadline = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(members[0].ctx), deadline)
}
