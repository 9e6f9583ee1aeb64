package etcdstore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
)

// step is one decision, before it joins the chunk.
type step struct {
	b       *batch
	now     time.Time
	deps    map[string]int64
	runDeps map[string]bool
	writes  map[string]write
	order   []string
	fence   string // the job, when the decision takes a fence
	stale   bool
	err     error
}

// lookup returns what the batch knows of key: as read or written, from
// the store's cache, or else assumed absent (not fresh).
func (b *batch) lookup(key string) entry {
	if e, ok := b.keys[key]; ok {
		return e
	}
	e, _ := b.s.cached(key)
	b.keys[key] = e
	return e
}

// get returns key's entry as the decision sees it, after the writes of the
// chunk and of the decision itself, and makes the decision depend on it.
func (st *step) get(key string) entry {
	for _, ws := range []map[string]write{st.writes, st.b.ch.writes} {
		if w, ok := ws[key]; ok {
			return entry{present: !w.del, value: w.value, mod: pendingFence, fresh: true}
		}
	}
	e := st.b.lookup(key)
	if _, ok := st.b.ch.deps[key]; !ok {
		if e.present {
			st.deps[key] = e.mod
		} else {
			st.deps[key] = 0
		}
	}
	st.stale = st.stale || !e.fresh
	return e
}

// running returns the markers of job's running slots as the decision sees
// them, and makes the decision depend on the whole range.
func (st *step) running(job string) []slotstore.Marker {
	b := st.b
	if _, ok := b.runs[job]; !ok {
		prefix := b.s.k.running(job)
		resp, err := b.s.read(b.ctx, b.op, clientv3.OpGet(prefix, clientv3.WithPrefix()))
		if err != nil {
			st.err = err
			return nil
		}
		b.learnRunning(job, resp.Responses[0].GetResponseRange().GetKvs(), resp.Header.Revision)
	}
	st.runDeps[job] = true
	prefix := b.s.k.running(job)
	seen := map[string]bool{}
	var out []slotstore.Marker
	add := func(key string, value []byte, mod int64) {
		if seen[key] {
			return
		}
		seen[key] = true
		if value == nil {
			return
		}
		m, err := decodeMarker(value, mod, b.s.fenceBase.Load())
		if err != nil {
			st.err = fmt.Errorf("%w (key %q)", err, key)
			return
		}
		out = append(out, m)
	}
	for _, ws := range []map[string]write{st.writes, b.ch.writes} {
		for k, w := range ws {
			if strings.HasPrefix(k, prefix) {
				if w.del {
					add(k, nil, 0)
				} else {
					add(k, w.value, pendingFence)
				}
			}
		}
	}
	for k, e := range b.keys {
		if strings.HasPrefix(k, prefix) && e.present {
			add(k, e.value, e.mod)
		}
	}
	slices.SortFunc(out, func(a, b slotstore.Marker) int { return a.Slot.Compare(b.Slot) })
	return out
}

func (st *step) put(key string, value []byte, lease bool) {
	st.set(key, write{value: value, lease: lease})
}
func (st *step) del(key string) { st.set(key, write{del: true}) }

func (st *step) set(key string, w write) {
	if _, ok := st.writes[key]; !ok {
		st.order = append(st.order, key)
	}
	st.writes[key] = w
}

// fail makes the decision fail the call.
func (st *step) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}
