package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// How a batch of requests (Claim, Skip, Enroll) is decided.
//
// The requests are decided in order, in Go, by slotstore's decision table,
// against what the batch knows of the keys each decision reads: read
// before (a read of a window of requests' keys, one round trip), learnt
// from a transaction that failed, written by the batch itself, or, for a
// key the batch has not read, assumed (a marker absent; a generation as
// the store last saw it). Consecutive decisions are gathered into a chunk,
// which one transaction commits: its compares check that every key a
// decision read still has the ModRevision the decision saw (a running
// range, that no key of it changed or appeared), its Then writes what the
// decisions wrote, and its Else reads back every key the compares cover.
// So a chunk commits only if its decisions still hold, and a chunk that
// fails learns, in the same round trip, what it needs to decide again.
//
// A chunk closes before a decision that would not fit in it: a second
// claim of one job that takes a fence (fences are revisions, and one
// transaction has one), a second write of a key, more operations than
// Options.MaxTxnOps or more bytes than maxTxnBytes. A chunk of decisions
// that write nothing and read only fresh entries commits without a
// transaction.

// maxTxnBytes bounds the keys and values of one transaction, below etcd's
// default request limit of 1.5 MiB (--max-request-bytes).
const maxTxnBytes = 1 << 20

// maxConflicts bounds the chunks of one call that fail their compares
// before the call gives up with ErrConflict; maxRetries bounds the sends of
// one transaction that etcd refused for a passing reason (no leader yet).
const (
	maxConflicts = 64
	maxRetries   = 20
)

// errConflict is the failure of a chunk whose compares did not hold.
var errConflict = errors.New("compares failed")

// write is one write of a chunk.
type write struct {
	value []byte
	del   bool
	lease bool // put under the process lease
}

// batch is one call's knowledge of keys, and its open chunk.
type batch struct {
	s   *Store
	ctx context.Context
	op  string
	// keys is every key the batch knows, as committed.
	keys map[string]entry
	// runs holds, for each job whose running range the batch read whole,
	// the revision it was read at: every key of the range in keys, and no
	// other, had a ModRevision no later.
	runs map[string]int64
	// keysOf returns the keys deciding request i reads, for the reads of
	// a window ahead.
	keysOf func(i int) []string
	ch     chunk
	// applied is set once a transaction with writes committed: an error
	// after it leaves the call's outcome unknown.
	applied   bool
	conflicts int
}

// chunk is the decisions a transaction will commit.
type chunk struct {
	first   int              // the first request it decides
	n       int              // how many it decides
	deps    map[string]int64 // key → the ModRevision its decisions saw, 0 for absent
	runDeps map[string]bool  // jobs whose running markers its decisions read
	writes  map[string]write
	order   []string        // the keys of writes, in order
	fenced  map[string]bool // jobs with a decision that takes a fence
	stale   bool            // a decision read an entry that is not fresh
	bytes   int
}

func (c *chunk) reset(first int) {
	*c = chunk{first: first, deps: map[string]int64{}, runDeps: map[string]bool{}, writes: map[string]write{},
		fenced: map[string]bool{}}
}

func (s *Store) newBatch(ctx context.Context, op string) *batch {
	b := &batch{s: s, ctx: ctx, op: op, keys: map[string]entry{}, runs: map[string]int64{}}
	b.ch.reset(0)
	return b
}

// run decides n requests in order, decide deciding request i in st, and
// commits them chunk by chunk; done(i, rev) runs for each request once its
// chunk committed, with the chunk's revision (0 when it wrote nothing).
// A request decided in a chunk that failed its compares is decided again.
func (b *batch) run(n int, decide func(i int, st *step), done func(i int, rev int64)) error {
	for i := 0; ; {
		if i == n && b.ch.n == 0 {
			return nil
		}
		if i < n {
			if err := b.readAhead(i, n); err != nil {
				return err
			}
			st := &step{b: b, now: b.s.now(), deps: map[string]int64{}, runDeps: map[string]bool{}, writes: map[string]write{}}
			decide(i, st)
			if st.err != nil {
				return b.failed(st.err)
			}
			if b.fits(st) {
				b.add(st)
				i++
				continue
			}
			if b.ch.n == 0 {
				return b.failed(fmt.Errorf("%w: request %d needs more than %d operations or %d bytes", ErrTooLarge, i,
					b.s.maxOps, maxTxnBytes))
			}
		}
		switch err := b.commit(done); {
		case err == nil:
			b.ch.reset(i)
		case errors.Is(err, errConflict):
			i = b.ch.first
			b.ch.reset(i)
		default:
			return err
		}
	}
}

// failed returns err, the failure of the call after some of it may have
// been committed: an unknown outcome once a chunk with writes has.
func (b *batch) failed(err error) error {
	if b.applied && !errors.Is(err, slotstore.ErrOutcomeUnknown) && !errors.Is(err, slotstore.ErrClosed) {
		return rules.OutcomeUnknown("etcdstore "+b.op+": after part of the batch was committed", err)
	}
	return err
}

// readAhead reads, in one round trip, the keys of the requests from i on
// that the batch does not know, when request i's are among them and more
// than one request is left. (A batch of one assumes instead: most claims
// are of a slot nobody has claimed, and its transaction checks.)
func (b *batch) readAhead(i, n int) error {
	if n-i < 2 || b.keysOf == nil {
		return nil
	}
	unknown := func(j int) []string {
		var out []string
		for _, k := range b.keysOf(j) {
			if _, ok := b.keys[k]; !ok {
				out = append(out, k)
			}
		}
		return out
	}
	if len(unknown(i)) == 0 {
		return nil
	}
	var want []string
	seen := map[string]bool{}
	for j := i; j < n; j++ {
		ks := unknown(j)
		if len(want)+len(ks) > b.s.maxOps {
			break
		}
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				want = append(want, k)
			}
		}
	}
	ops := make([]clientv3.Op, len(want))
	for j, k := range want {
		ops[j] = clientv3.OpGet(k)
	}
	resp, err := b.s.read(b.ctx, b.op, ops...)
	if err != nil {
		return b.failed(err)
	}
	for j, k := range want {
		b.learn(k, resp.Responses[j].GetResponseRange().GetKvs())
	}
	return nil
}

// learn records what a read of key found (kvs: nothing, or its one key).
func (b *batch) learn(key string, kvs []*mvccpb.KeyValue) {
	e := entryOf(kvs)
	b.keys[key] = e
	b.s.remember(key, e)
}

// entryOf is what a read of one key found (kvs: nothing, or the key).
func entryOf(kvs []*mvccpb.KeyValue) entry {
	if len(kvs) == 0 {
		return entry{fresh: true}
	}
	return entry{present: true, value: kvs[0].Value, mod: kvs[0].ModRevision, fresh: true}
}

// learnRunning records a read of job's running range at revision rev.
func (b *batch) learnRunning(job string, kvs []*mvccpb.KeyValue, rev int64) {
	prefix := b.s.k.running(job)
	for k := range b.keys {
		if strings.HasPrefix(k, prefix) {
			delete(b.keys, k)
		}
	}
	for _, kv := range kvs {
		b.keys[string(kv.Key)] = entry{present: true, value: kv.Value, mod: kv.ModRevision, fresh: true}
	}
	b.runs[job] = rev
}

// fits reports whether st can join the open chunk.
func (b *batch) fits(st *step) bool {
	c := &b.ch
	if st.fence != "" && c.fenced[st.fence] {
		return false
	}
	bytes := c.bytes
	for k, w := range st.writes {
		if _, dup := c.writes[k]; dup {
			return false
		}
		bytes += len(k) + len(w.value)
	}
	deps := len(c.deps)
	for k := range st.deps {
		if _, ok := c.deps[k]; !ok {
			deps++
			bytes += len(k)
		}
	}
	runs := map[string]bool{}
	for j := range c.runDeps {
		runs[j] = true
	}
	for j := range st.runDeps {
		runs[j] = true
	}
	cmps := deps
	for j := range runs {
		cmps += 1 + b.runningKeys(j)
	}
	max := b.s.maxOps - 1 // and the cluster record's compare and read
	return cmps <= max && len(c.writes)+len(st.writes) <= max && deps+len(runs) <= max && bytes <= maxTxnBytes
}

// runningKeys counts the keys the batch knows in job's running range.
func (b *batch) runningKeys(job string) int {
	prefix, n := b.s.k.running(job), 0
	for k, e := range b.keys {
		if e.present && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// add makes st part of the open chunk.
func (b *batch) add(st *step) {
	c := &b.ch
	for k, mod := range st.deps {
		if _, ok := c.deps[k]; !ok {
			c.deps[k] = mod
			c.bytes += len(k)
		}
	}
	for j := range st.runDeps {
		c.runDeps[j] = true
	}
	for _, k := range st.order {
		w := st.writes[k]
		c.writes[k] = w
		c.order = append(c.order, k)
		c.bytes += len(k) + len(w.value)
	}
	if st.fence != "" {
		c.fenced[st.fence] = true
	}
	c.stale = c.stale || st.stale
	c.n++
}
