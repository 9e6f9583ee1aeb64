package etcdstore

import (
	"context"
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
// transaction.
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

// group is the mutations waiting for a transaction, and whether one of
// their callers is sending.
type group struct {
	mu      sync.Mutex
	pending []*grouped
	sending bool
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
	// when its caller is to send the pending mutations.
	wake     chan struct{}
	answered bool
	resp     *clientv3.TxnResponse
	err      error
}

// commitGrouped sends g's transaction with the others pending and returns
// its answer as its own transaction's would be: Succeeded and the header,
// or, when its compare failed, its marker as Responses[0].
func (s *Store) commitGrouped(g *grouped) (*clientv3.TxnResponse, error) {
	g.wake = make(chan struct{}, 1)
	gr := &s.group
	gr.mu.Lock()
	gr.pending = append(gr.pending, g)
	lead := !gr.sending
	gr.sending = true
	gr.mu.Unlock()
	if !lead {
		<-g.wake
		gr.mu.Lock()
		lead = !g.answered
		gr.mu.Unlock()
	}
	if lead {
		s.sendGroups(g)
	}
	return g.resp, g.err
}

// sendGroups sends the pending mutations, oldest first, a group a
// transaction, until own is answered; then it hands the sending on to the
// oldest still pending, so no caller sends for others for long.
func (s *Store) sendGroups(own *grouped) {
	gr := &s.group
	for {
		gr.mu.Lock()
		if own.answered {
			if len(gr.pending) > 0 {
				gr.pending[0].wake <- struct{}{}
			} else {
				gr.sending = false
			}
			gr.mu.Unlock()
			return
		}
		members := s.takeGroup()
		gr.mu.Unlock()
		retry := s.sendGroup(members)
		gr.mu.Lock()
		gr.pending = append(retry, gr.pending...)
		for _, m := range members {
			if m.answered && m != own {
				m.wake <- struct{}{}
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
// answers each, but those whose compare held in a transaction another
// member's failed: it returns those, to go again.
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
		g.answered = true
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
// earliest deadline of its members, and is not cancelled with any one of
// them, whose mutation the others' transaction carries.
func groupContext(members []*grouped) (context.Context, context.CancelFunc) {
	var (
		deadline time.Time
		has      bool
	)
	for _, g := range members {
		if d, ok := g.ctx.Deadline(); ok && (!has || d.Before(deadline)) {
			deadline, has = d, true
		}
	}
	ctx := context.WithoutCancel(members[0].ctx)
	if has {
		return context.WithDeadline(ctx, deadline)
	}
	return context.WithCancel(ctx)
}
