package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/slotstore"
)

// The claim statements of earlier builds, word for word: that of commit
// 8e30ad2 (schema version 8; the builds of version 9 send the same) and
// that of the build of version 6 (commit 26b4fc2's parent), from their
// queries.go — but for "false AS backfill" and "false AS superseded",
// constants that let this build's reader read their rows: the server runs
// the same call and returns the same columns it did; and that of the
// build of version 11 (commit 9635b10; the builds of version 10, and of
// 12 before a claim's NotAfter, send the same). Each ends with this
// build's last column, the answer's time (clock_timestamp()), which the
// statement reads after the call: the call is the earlier build's.
const (
	version11ClaimSQL = `SELECT ord, won, prev_holder, retry, job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until,
	finished_at, outcome, error, duration_ns, reason, manual, incarnation, backfill, replaced_slots, replaced_fences, now,
			coalesce(superseded, false), clock_timestamp()
			FROM {schema}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`
	version8ClaimSQL = `SELECT ord, won, prev_holder, retry, job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until,
	finished_at, outcome, error, duration_ns, reason, manual, incarnation, false AS backfill, replaced_slots, replaced_fences, now,
	false AS superseded, clock_timestamp()
			FROM {schema}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`
	version6ClaimSQL = `SELECT ord, won, prev_holder, retry, job, slot, state, holder, fence, attempt, claimed_at, lease_end, keep_until,
	finished_at, outcome, error, duration_ns, reason, manual, incarnation, false AS backfill, replaced_slots, replaced_fences, now,
	false AS superseded, clock_timestamp()
			FROM {schema}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	previousRenewSQL = `SELECT {schema}.renew($1, $2, $3, $4)`
)

// oldReplica claims as a replica of an earlier build does: one request a
// batch, with that build's statement and arguments (as many as the
// statement has: backfill and spec only when it has them; never a spec
// named, nor a NotAfter).
type oldReplica struct {
	name string
	pool *pgxpool.Pool
	sql  string
}

// claim claims job@slot for a minute, sending the arguments that build's
// run sent, and returns whether it won, and the fence of the slot's
// marker.
func (r oldReplica) claim(ctx context.Context, job string, slot time.Time) (bool, int64, error) {
	b := newBatch(1)
	b.add(slotstore.ClaimRequest{Job: job, Slot: slot, Lease: time.Minute, Retain: time.Hour}, false, "", time.Time{})
	args := b.args(r.name, r.name+"-i")[:strings.Count(r.sql, "$")]
	rows, err := r.pool.Query(ctx, r.sql, args...)
	if err != nil {
		return false, 0, fmt.Errorf("%s: claim %s: %w", r.name, key(job, slot), err)
	}
	defer rows.Close()
	res, err := b.read(rows)
	if err != nil {
		return false, 0, fmt.Errorf("%s: claim %s: %w", r.name, key(job, slot), err)
	}
	return won(r.name, job, slot, res[0])
}

// won says whether res won, and the fence of its slot's marker; an answer
// other than won or held is an error.
func won(replica, job string, slot time.Time, res slotstore.ClaimResult) (bool, int64, error) {
	if res.Status != slotstore.Won && res.Status != slotstore.Held {
		return false, 0, fmt.Errorf("%s: claim %s: %v", replica, key(job, slot), res.Status)
	}
	return res.Status == slotstore.Won, res.Marker.Fence, nil
}

// claimer is a replica claiming job j's slots with its build's statement:
// claim claims a slot for a minute and returns whether it won, and the
// fence of the slot's marker.
type claimer struct {
	name  string
	claim func(slot time.Time) (bool, int64, error)
}

// win is a won claim.
type win struct {
	replica string
	slot    int
	fence   int64
}

// TestRollingUpgrade: replicas of the previous build (and of version 6's
// and version 8's) keep claiming, with their own statements, before, while and after this
// build upgrades the schema's functions, beside this build's store
// claiming the same slots: every slot has exactly one winner, the fences
// each replica wins grow, and no two wins share a fence.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	old := oldStore(t, "rolling", oldVersions)
	q := quote(old.schema)
	in := func(sql string) string { return strings.ReplaceAll(sql, "{schema}", q) }
	var olds []claimer
	for _, r := range []oldReplica{
		{"prev1", old.pool, in(version11ClaimSQL)},
		{"prev2", old.pool, in(version11ClaimSQL)},
		{"v8", old.pool, in(version8ClaimSQL)},
		{"v6", old.pool, in(version6ClaimSQL)},
	} {
		olds = append(olds, claimer{r.name, func(slot time.Time) (bool, int64, error) { return r.claim(ctx, "j", slot) }})
	}
	r := &rolling{t: t, base: nextHourUTC()}

	r.race(olds, 0, 20) // before the upgrade
	var (
		s   *Store
		err error
		wg  sync.WaitGroup
	)
	wg.Go(func() { s, err = New(ctx, old.pool, Options{Schema: old.schema}) })
	r.race(olds, 20, 40) // while this build starts
	wg.Wait()
	if err != nil {
		t.Fatalf("this build's store on the previous build's schema: %v", err)
	}
	defer s.Close()
	for _, n := range []int{16, 17, 18} { // version 6's claim, version 8's, and the previous build's
		var lang string
		if err := old.pool.QueryRow(ctx, `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
			WHERE p.pronamespace = $1::regnamespace AND p.proname = 'claim' AND p.pronargs = $2`, q, n).Scan(&lang); err != nil || lang != "sql" {
			t.Fatalf("the claim of %d arguments after the upgrade: language %q, %v; want this build's (sql)", n, lang, err)
		}
	}
	all := append(olds, claimer{"new", func(slot time.Time) (bool, int64, error) { return newClaim(ctx, s, slot) }})
	r.race(all, 40, 60) // after
	r.takeTurns(all, 60, 80)
	checkWins(t, r.wins, 80)

	// A replica of the previous build renews what it won after the upgrade.
	for _, w := range r.wins {
		if w.slot < 40 || w.replica == "new" {
			continue
		}
		var got string
		if err := old.pool.QueryRow(ctx, in(previousRenewSQL), "j", r.slot(w.slot), w.fence,
			micros(time.Minute)).Scan(&got); err != nil || got != "renewed" {
			t.Errorf("%s's renewal of slot %d: %q, %v", w.replica, w.slot, got, err)
		}
	}
}

// rolling records the wins of claimers of job j's slots, slot i being
// base plus i seconds.
type rolling struct {
	t    *testing.T
	base time.Time
	mu   sync.Mutex
	wins []win
}

func (r *rolling) slot(i int) time.Time { return r.base.Add(time.Duration(i) * time.Second) }

// claim has c claim slot i, records a win, and returns whether it won. A
// claim that failed because the upgrade changed the claim's row type under
// it (a call of the old text in flight while version 10's migration ran) is
// sent again, as the previous build retries a failed claim.
func (r *rolling) claim(c claimer, i int) bool {
	won, fence, err := c.claim(r.slot(i))
	for tries := 1; tries < 3 && rowTypeChanged(err); tries++ {
		won, fence, err = c.claim(r.slot(i))
	}
	if err != nil {
		r.t.Error(err)
		return false
	}
	if won {
		r.mu.Lock()
		r.wins = append(r.wins, win{c.name, i, fence})
		r.mu.Unlock()
	}
	return won
}

// race has every claimer of cs claim slots from to to, in order, all at
// once.
func (r *rolling) race(cs []claimer, from, to int) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for i := from; i < to; i++ {
				r.claim(c, i)
			}
		})
	}
	wg.Wait()
}

// takeTurns has the claimers of cs claim slots from to to one at a time,
// each slot first by the claimer whose turn it is, who must win it, then
// by the others, who must find it held; the fences then grow from turn to
// turn, whichever build claimed.
func (r *rolling) takeTurns(cs []claimer, from, to int) {
	n := len(r.wins)
	for i := from; i < to; i++ {
		first := cs[i%len(cs)]
		if !r.claim(first, i) {
			r.t.Errorf("%s, first to claim slot %d, did not win it", first.name, i)
		}
		for _, c := range cs {
			if c.name != first.name && r.claim(c, i) {
				r.t.Errorf("%s won slot %d that %s held", c.name, i, first.name)
			}
		}
	}
	if turns := r.wins[n:]; !slices.IsSortedFunc(turns, func(a, b win) int { return cmp.Compare(a.fence, b.fence) }) {
		r.t.Errorf("fences of the turns do not grow: %v", turns)
	}
}

// newClaim claims job j's slot for a minute with this build's store.
func newClaim(ctx context.Context, s *Store, slot time.Time) (bool, int64, error) {
	res, err := s.Claim(ctx, slotstore.ClaimParams{Replica: "new", Incarnation: "new-i",
		Requests: []slotstore.ClaimRequest{{Job: "j", Slot: slot, Lease: time.Minute, Retain: time.Hour}}})
	if err != nil {
		return false, 0, fmt.Errorf("new: claim %s: %w", key("j", slot), err)
	}
	return won("new", "j", slot, res[0])
}

// checkWins checks that each of slots 0 to n-1 has one winner, that each
// replica's fences grow in the order it won them, and that no two wins
// share a fence.
func checkWins(t *testing.T, wins []win, n int) {
	t.Helper()
	per := make([]int, n)
	last := map[string]win{}
	fences := map[int64]bool{}
	for _, w := range wins {
		per[w.slot]++
		if l, ok := last[w.replica]; ok && w.fence <= l.fence {
			t.Errorf("%s won slot %d with fence %d after slot %d with %d", w.replica, w.slot, w.fence, l.slot, l.fence)
		}
		last[w.replica] = w
		if fences[w.fence] {
			t.Errorf("fence %d won twice", w.fence)
		}
		fences[w.fence] = true
	}
	if i := slices.IndexFunc(per, func(c int) bool { return c != 1 }); i >= 0 {
		t.Errorf("slot %d has %d winners, want 1", i, per[i])
	}
}

// nextHourUTC is the start of the next hour at least a minute away: a slot
// after the generation of any job a claim begins now.
func nextHourUTC() time.Time {
	return time.Now().Add(time.Minute).UTC().Truncate(time.Hour).Add(time.Hour)
}

// rowTypeChanged reports whether err is what a claim in flight meets when
// a migration changed the claim_result type under it: its cast of a row
// to the type (42846), or, in a call planned before the change, a result
// whose columns no longer match the type's (42804). Either aborts the
// claim's statement, so nothing was claimed; the claim is sent again.
func rowTypeChanged(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "42846" && strings.Contains(pe.Message, "claim_result") ||
		pe.Code == "42804" && strings.Contains(pe.Message, "does not match function result type")
}
