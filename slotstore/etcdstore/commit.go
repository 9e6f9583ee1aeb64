package etcdstore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// How a batch's chunk is committed: one transaction whose compares guard
// every read its decisions made, and what the batch learns from its answer
// (see batch.go for how the decisions are made and gathered).

// commit commits the open chunk. It returns errConflict when the chunk's
// compares failed, having learnt the keys they cover.
func (b *batch) commit(done func(i int, rev int64)) error {
	c := &b.ch
	if len(c.writes) == 0 && !c.stale {
		b.settle(done, 0)
		return nil
	}
	g := b.guard()
	resp, err := b.s.commit(b.ctx, b.op, g.cmps, c.order, c.writes, g.els)
	if err != nil {
		if len(c.writes) == 0 {
			return b.failed(b.s.failRead(b.op, err))
		}
		return b.failed(b.s.fail(b.op, err))
	}
	rev := resp.Header.Revision
	b.s.sawRev(rev)
	if !resp.Succeeded {
		return b.conflicted(g, resp, rev)
	}
	b.committed(rev)
	if len(c.writes) > 0 {
		b.applied = true
	} else {
		rev = 0
	}
	b.settle(done, rev)
	return nil
}

// settle tells done of each request of the open chunk, committed at rev.
func (b *batch) settle(done func(i int, rev int64), rev int64) {
	for i := b.ch.first; i < b.ch.first+b.ch.n; i++ {
		done(i, rev)
	}
}

// guard is what the transaction of a chunk checks: its compares, and the
// reads of its Else, of each key of deps, then each job's running range,
// then the cluster record.
type guard struct {
	deps []string // the keys the decisions read, sorted
	runs []string // the jobs whose running ranges they read, sorted
	crev int64    // the cluster record's CreateRevision compared
	cmps []clientv3.Cmp
	els  []clientv3.Op
}

// guard returns the compares that hold while the open chunk's decisions
// do: every key they read unchanged, no key of a running range they read
// changed or new, and the cluster record this store's fences are based on
// still the prefix's (clusterValue).
func (b *batch) guard() guard {
	c := &b.ch
	g := guard{deps: make([]string, 0, len(c.deps)), runs: make([]string, 0, len(c.runDeps))}
	for k := range c.deps {
		g.deps = append(g.deps, k)
	}
	slices.Sort(g.deps)
	for j := range c.runDeps {
		g.runs = append(g.runs, j)
	}
	slices.Sort(g.runs)
	for _, k := range g.deps {
		g.cmps = append(g.cmps, clientv3.Compare(clientv3.ModRevision(k), "=", c.deps[k]))
		g.els = append(g.els, clientv3.OpGet(k))
	}
	for _, j := range g.runs {
		prefix := b.s.k.running(j)
		g.cmps = append(g.cmps, clientv3.Compare(clientv3.ModRevision(prefix), "<", b.runs[j]+1).WithPrefix())
		for k, e := range b.keys {
			if e.present && strings.HasPrefix(k, prefix) {
				g.cmps = append(g.cmps, clientv3.Compare(clientv3.ModRevision(k), "=", e.mod))
			}
		}
		g.els = append(g.els, clientv3.OpGet(prefix, clientv3.WithPrefix()))
	}
	g.crev = b.s.clusterRev.Load()
	g.cmps = append(g.cmps, clientv3.Compare(clientv3.CreateRevision(b.s.k.cluster()), "=", g.crev))
	g.els = append(g.els, clientv3.OpGet(b.s.k.cluster()))
	return g
}

// conflicted learns what the Else of a chunk whose compares failed at rev
// read, and returns errConflict, or the call's failure after too many.
func (b *batch) conflicted(g guard, resp *clientv3.TxnResponse, rev int64) error {
	if kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().GetKvs(); len(kvs) == 0 || kvs[0].CreateRevision != g.crev {
		// The record was written anew: read it (or write it) and decide
		// again on its base.
		if err := b.s.checkCluster(b.ctx); err != nil {
			return b.failed(b.s.failRead(b.op, err))
		}
	}
	for i, k := range g.deps {
		b.learn(k, resp.Responses[i].GetResponseRange().GetKvs())
	}
	for i, j := range g.runs {
		b.learnRunning(j, resp.Responses[len(g.deps)+i].GetResponseRange().GetKvs(), rev)
	}
	b.conflicts++
	if b.conflicts > maxConflicts {
		return b.failed(fmt.Errorf("etcdstore: %s: %w (%d attempts)", b.op, ErrConflict, b.conflicts))
	}
	if b.conflicts > 3 {
		pause(b.ctx, time.Duration(b.conflicts)*time.Millisecond)
	}
	return errConflict
}

// committed records what the open chunk's transaction wrote at rev: the
// keys its decisions read are fresh, the keys it wrote as written, and the
// running ranges it read as of rev.
func (b *batch) committed(rev int64) {
	c := &b.ch
	for k := range c.deps {
		e := b.keys[k]
		e.fresh = true
		b.keys[k] = e
	}
	touched := map[string]bool{}
	for _, k := range c.order {
		w := c.writes[k]
		e := entry{present: !w.del, value: w.value, mod: rev, fresh: true}
		if w.del {
			e = entry{fresh: true}
		}
		b.keys[k] = e
		b.s.remember(k, e)
		if job, ok := b.s.k.runningJob(k); ok {
			touched[job] = true
		}
	}
	for j := range touched {
		if !c.runDeps[j] {
			delete(b.runs, j) // changed beside what the batch read: read it again when needed
		}
	}
	for j := range c.runDeps {
		b.runs[j] = rev
	}
}
