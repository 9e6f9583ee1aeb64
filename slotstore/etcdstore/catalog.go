package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// The catalog (The catalog in slotstore's package documentation) keeps
// two keys per job. cat/<job> holds the job's entry as rules.EntryJSON,
// written by every enrolment with a spec (its carriers' times change each
// time). spec/<job> holds the fingerprint of the spec in force alone,
// written with the entry only when that changes: a claim or skip naming a
// spec reads and compares this small key, which the enrolments of the
// spec in force leave alone, so they do not fail its compares. The store
// caches spec keys as it does generations; a cached one is compared by
// the claim's transaction like any key the claim read, so a spec that
// changed since is learnt from its Else and the claim decided again.

// offer decides, in st, the enrolment of job with spec sp by replica
// (sp nil for an enrolment without specs, which writes nothing; nor does
// one whose spec neither is nor takes force, unless it drops the enroller
// from the carriers), and
// returns the job's spec in force after it. The decision reads the
// job's entry, and with a spec its spec key, so the transaction's compares
// cover both.
func (st *step) offer(job string, sp *slotstore.Spec, replica string) slotstore.SpecRecord {
	k := st.b.s.k
	cur, ok := st.entry(job)
	if !ok || sp == nil {
		if cur == nil {
			return slotstore.SpecRecord{}
		}
		return cur.InForce
	}
	// The entry keeps times in milliseconds: answer as Catalog will read.
	now := time.UnixMilli(st.now.UnixMilli()).UTC()
	e, took := rules.Offer(cur, job, *sp, replica, now)
	// Written when the spec took force or was in force (the carrier's
	// time), or when the enroller stopped carrying the spec in force; never
	// for a live schedule held as data, which enrolments leave as it is.
	live := cur != nil && cur.Run != "" && !cur.Deleted
	if !live && (took || e.InForce.Fingerprint == sp.Fingerprint || (cur != nil && len(e.Carriers) != len(cur.Carriers))) {
		v, err := json.Marshal(rules.ToJSON(e))
		if err != nil {
			st.fail(fmt.Errorf("etcdstore: encoding the catalog entry of %s: %w", job, err))
			return e.InForce
		}
		st.put(k.catalog(job), v, false)
	}
	if sk := k.spec(job); st.inForce(sk) != e.InForce.Fingerprint {
		st.put(sk, []byte(e.InForce.Fingerprint), false)
	}
	return e.InForce
}

// entry returns job's catalog entry as the decision sees it, nil when it
// has none; false when it cannot be read (st.err says why).
func (st *step) entry(job string) (*slotstore.CatalogEntry, bool) {
	key := st.b.s.k.catalog(job)
	e := st.get(key)
	if !e.present {
		return nil, true
	}
	ce, err := decodeEntry(job, e.value, e.mod)
	if err != nil {
		st.fail(fmt.Errorf("%w (key %q)", err, key))
		return nil, false
	}
	return &ce, true
}

// inForce returns the fingerprint the spec key sk holds, empty when the
// job has no spec in force.
func (st *step) inForce(sk string) string {
	e := st.get(sk)
	if !e.present {
		return ""
	}
	return string(e.value)
}

// specAllows reports whether a request naming spec (empty for none) may
// act on job: it reads the job's spec key only for a request that names
// one, so a request without costs nothing more.
func (st *step) specAllows(job, spec string) bool {
	return spec == "" || rules.SpecAllows(st.inForce(st.b.s.k.spec(job)), spec)
}

// decodeEntry reads the catalog entry of job from its key's value, the
// key's ModRevision being mod (pendingFence for a value not yet
// committed). A schedule's entry (a version) without a seq is one its
// last schedule write put: its Seq is the key's ModRevision, the revision
// of that write (a value cannot hold the revision it is written at), and
// any later write of the key (an enrolment of a deleted schedule's ID)
// writes the Seq out, as ToJSON does.
func decodeEntry(job string, v []byte, mod int64) (slotstore.CatalogEntry, error) {
	var j rules.EntryJSON
	if err := json.Unmarshal(v, &j); err != nil {
		return slotstore.CatalogEntry{}, fmt.Errorf("etcdstore: catalog entry of %s: %w", job, err)
	}
	e := rules.FromJSON(job, j)
	if e.Version > 0 && e.Seq == 0 {
		e.Seq = mod
	}
	return e, nil
}

// Catalog implements slotstore.Store. Without p.Jobs it first lists the
// entry keys (keys only); the jobs of the page are then read MaxTxnOps a
// transaction. Escaped names do not sort as the names do, so the page is
// chosen from the names themselves.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "catalog"); err != nil {
		return nil, err
	}
	jobs := slices.Clone(p.Jobs)
	if len(jobs) == 0 {
		if jobs, err = s.jobsUnder(ctx, "catalog", dirCatalog); err != nil {
			return nil, err
		}
	}
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	jobs = slices.DeleteFunc(jobs, func(j string) bool { return j <= p.After })
	var out []slotstore.CatalogEntry
	for len(jobs) > 0 && len(out) < p.Limit {
		n := min(len(jobs), s.maxOps, p.Limit-len(out))
		ops := make([]clientv3.Op, n)
		for i, j := range jobs[:n] {
			ops[i] = clientv3.OpGet(s.k.catalog(j))
		}
		resp, err := s.read(ctx, "catalog", ops...)
		if err != nil {
			return nil, err
		}
		for i, j := range jobs[:n] {
			kvs := resp.Responses[i].GetResponseRange().GetKvs()
			if len(kvs) == 0 {
				continue
			}
			e, err := decodeEntry(j, kvs[0].Value, kvs[0].ModRevision)
			if err != nil {
				return nil, s.failRead("catalog", err)
			}
			out = append(out, e)
		}
		jobs = jobs[n:]
	}
	return out, nil
}
