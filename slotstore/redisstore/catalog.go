package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// A job's catalog entry is three keys under its hash tag (keys.go), which
// enroll.lua changes together: the hash <prefix>{job}:spec of the spec in
// force, the hash <prefix>{job}:carriers of its carriers and the list
// <prefix>{job}:past of the specs in force before. claim.lua reads the
// spec's fingerprint, one HGET a job and batch, for requests that name a
// spec. Revisions are kept as decimal text, so that an int64 keeps every
// digit in Lua; bodies are kept as given, byte for byte.

// Catalog implements slotstore.Store: one read of the catalog's index
// (none when p names the jobs), then one pipeline of catalog.lua calls that
// read each job's entry in one step, so an entry is never seen halfway
// through an enrolment.
func (s *Store) Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error) {
	p, err := rules.NormalizeCatalog(p)
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, "catalog"); err != nil {
		return nil, err
	}
	if len(p.Jobs) > 0 {
		var jobs []string
		for _, j := range p.Jobs {
			if j > p.After {
				jobs = append(jobs, j)
			}
		}
		slices.Sort(jobs)
		out, err := s.entries(ctx, slices.Compact(jobs))
		if len(out) > p.Limit {
			out = out[:p.Limit]
		}
		return out, err
	}
	var out []slotstore.CatalogEntry
	for after := p.After; len(out) < p.Limit; {
		from := "-"
		if after != "" {
			from = "(" + after
		}
		want := p.Limit - len(out)
		jobs, err := s.client.ZRangeByLex(ctx, catalogKey(s.prefix), &redis.ZRangeBy{Min: from, Max: "+", Count: int64(want)}).Result()
		if err != nil {
			return nil, s.failRead("catalog: list its jobs", err)
		}
		page, err := s.entries(ctx, jobs)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(jobs) < want {
			break
		}
		after = jobs[len(jobs)-1] // some entries were gone: read on
	}
	return out, nil
}

// entries reads the catalog entries of jobs, in order, leaving out those
// with no spec in force (never enrolled with one, or lost with the data):
// catalog.lua, one call per hash slot (and per 1,000 jobs), pipelined.
func (s *Store) entries(ctx context.Context, jobs []string) ([]slotstore.CatalogEntry, error) {
	parts, calls := s.jobCalls(catalogScript, jobs, func(k jobKeys) string { return k.spec }, nil)
	op := fmt.Sprintf("catalog of %d jobs", len(jobs))
	got := make([]*slotstore.CatalogEntry, len(jobs))
	for i, cmd := range s.runAll(ctx, calls) {
		res, err := cmd.Result()
		if err != nil {
			return nil, s.failRead(op, err)
		}
		v, ok := res.([]any)
		if !ok {
			return nil, s.failRead(op, fmt.Errorf("unexpected catalog script reply %T", res))
		}
		r := &reply{v: v}
		for _, at := range parts[i] {
			got[at] = r.entry(jobs[at])
		}
		if r.err == nil && r.i != len(v) {
			r.fail(fmt.Sprintf("%d values for %d jobs", len(v), len(parts[i])))
		}
		if r.err != nil {
			return nil, s.failRead(op, r.err)
		}
	}
	out := make([]slotstore.CatalogEntry, 0, len(got))
	for _, e := range got {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, nil
}

// entry reads job's catalog entry as the prelude's entry lists it: nil
// when the job has no spec in force.
func (r *reply) entry(job string) *slotstore.CatalogEntry {
	e := slotstore.CatalogEntry{Job: job, InForce: r.spec(), Carriers: map[string]time.Time{}}
	e.Run, e.Version, e.Seq, e.Deleted = r.str(), r.int(), r.int(), r.str() == "1"
	for n := r.int(); n > 0 && r.err == nil; n-- {
		name := r.str()
		e.Carriers[name] = r.millis()
	}
	for n := r.int(); n > 0 && r.err == nil; n-- {
		rec := r.str()
		f, err := netstrings(rec, 6)
		if err != nil {
			r.fail(fmt.Sprintf("past spec of %s: %v", job, err))
			break
		}
		sr, err := specOf(f[0], f[5], f[1], f[2], f[3], f[4])
		if err != nil {
			r.fail(err.Error())
		}
		e.Past = append(e.Past, sr)
	}
	if e.InForce.Fingerprint == "" {
		return nil
	}
	return &e
}

// specOf builds a spec record from its fields as the store keeps them:
// revision decimal, times in Unix ms, empty for none.
func specOf(fp, body, rev, replica, since, until string) (slotstore.SpecRecord, error) {
	r := slotstore.SpecRecord{Fingerprint: fp, Replica: replica}
	if body != "" {
		r.Body = []byte(body)
	}
	var err error
	if r.Revision, err = strconv.ParseInt(cmp.Or(rev, "0"), 10, 64); err != nil {
		return r, fmt.Errorf("spec %s: revision %q: %w", fp, rev, err)
	}
	for _, t := range []struct {
		text string
		at   *time.Time
	}{{since, &r.Since}, {until, &r.Until}} {
		if t.text == "" {
			continue
		}
		ms, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return r, fmt.Errorf("spec %s: time %q: %w", fp, t.text, err)
		}
		*t.at = time.UnixMilli(ms).UTC()
	}
	return r, nil
}

// netstrings splits rec, n netstrings ('<length>:<bytes>,') end to end.
func netstrings(rec string, n int) ([]string, error) {
	out := make([]string, 0, n)
	for range n {
		head, rest, ok := strings.Cut(rec, ":")
		size, err := strconv.Atoi(head)
		if !ok || err != nil || size < 0 || len(rest) < size+1 || rest[size] != ',' {
			return nil, fmt.Errorf("malformed netstring at %q", rec)
		}
		out = append(out, rest[:size])
		rec = rest[size+1:]
	}
	if rec != "" {
		return nil, fmt.Errorf("%d bytes after %d netstrings", len(rec), n)
	}
	return out, nil
}

// spec reads the five values of a spec in force from the reply: fingerprint
// (empty for none), body, revision, replica, since.
func (r *reply) spec() slotstore.SpecRecord {
	fp, body, rev, replica, since := r.str(), r.str(), r.str(), r.str(), r.str()
	if fp == "" {
		return slotstore.SpecRecord{}
	}
	sr, err := specOf(fp, body, rev, replica, since, "")
	if err != nil {
		r.fail(err.Error())
	}
	return sr
}
