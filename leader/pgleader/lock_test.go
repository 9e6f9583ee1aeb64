package pgleader_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/pgleader"
)

// lockObserver reads, on a connection of its own, who holds the advisory
// lock of one name and which pid the name's row records.
type lockObserver struct {
	conn   *pgx.Conn
	schema string
	name   string
}

func observe(t *testing.T, dsn, schema, name string) *lockObserver {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &lockObserver{conn: conn, schema: schema, name: name}
}

// holders returns the backend pids that hold the name's advisory lock.
func (o *lockObserver) holders(t *testing.T) []int32 {
	t.Helper()
	key := pgleader.LockKey(o.schema, o.name)
	rows, err := o.conn.Query(t.Context(), `SELECT pid FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND classid::bigint = $1 AND objid::bigint = $2`,
		int64(uint64(key)>>32), int64(uint32(key)))
	if err != nil {
		t.Fatalf("pg_locks: %v", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatalf("pg_locks: %v", err)
	}
	return pids
}

// recorded returns the pid the name's row records for the current term.
func (o *lockObserver) recorded(t *testing.T) int32 {
	t.Helper()
	var pid int32
	q := "SELECT pid FROM " + pgx.Identifier{o.schema, "leaders"}.Sanitize() + " WHERE name = $1"
	if err := o.conn.QueryRow(t.Context(), q, o.name).Scan(&pid); err != nil {
		t.Fatalf("the leaders row: %v", err)
	}
	return pid
}

// wantLeaderHolds fails t unless exactly one session holds the lock: the
// one the row records.
func (o *lockObserver) wantLeaderHolds(t *testing.T, when string) int32 {
	t.Helper()
	pids, leader := o.holders(t), o.recorded(t)
	if len(pids) != 1 || pids[0] != leader {
		t.Fatalf("%s: the lock is held by %v, want only the leader's session %d", when, pids, leader)
	}
	return leader
}

// campaign runs Lead in a goroutine; its fn reports each term on terms and
// its end on ends, and holds the term until resign is closed or the term
// ends.
type campaign struct {
	terms  chan leader.Term
	ends   chan end
	resign chan struct{}
	cancel context.CancelFunc
	done   chan error
}

func startCampaign(t *testing.T, e leader.Elector, p leader.Params) *campaign {
	ctx, cancel := context.WithCancel(context.Background())
	c := &campaign{terms: make(chan leader.Term, 4), ends: make(chan end, 4), resign: make(chan struct{}),
		cancel: cancel, done: make(chan error, 1)}
	go func() {
		c.done <- e.Lead(ctx, p, func(ctx context.Context, term leader.Term) {
			c.terms <- term
			select {
			case <-ctx.Done():
			case <-c.resign:
			}
			c.ends <- end{at: time.Now(), cause: context.Cause(ctx)}
		})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// end is how a term ended: when fn saw it end, and why.
type end struct {
	at    time.Time
	cause error
}

// stop cancels the campaign and waits for Lead to return; it may be
// called more than once.
func (c *campaign) stop(t *testing.T) {
	c.cancel()
	if err, ok := <-c.done; ok {
		close(c.done)
		if err != nil {
			t.Errorf("Lead: %v", err)
		}
	}
}

func (c *campaign) term(t *testing.T, who string) leader.Term {
	t.Helper()
	select {
	case term := <-c.terms:
		return term
	case <-time.After(10 * time.Second):
		t.Fatalf("%s began no term within 10s", who)
	}
	return leader.Term{}
}

// The name's advisory lock is held by the leader's session alone, passes to
// the next leader with the term, and is gone once every Lead has returned:
// a campaign's dedicated connection never leaves it behind.
func TestLockFollowsTheTerm(t *testing.T) {
	pg := testserver.SharedPostgres(t)
	schema, quiet := freshSchema(), slog.New(slog.DiscardHandler)
	p := leader.Params{Name: "fanout", Replica: "A", Lease: time.Second}
	a := startCampaign(t, elector(t, pg.DSN(), schema, quiet), p)
	a.term(t, "A")
	o := observe(t, pg.DSN(), schema, p.Name)
	first := o.wantLeaderHolds(t, "A's term")

	p.Replica = "B"
	waiting := logged("waiting for the lease")
	b := startCampaign(t, elector(t, pg.DSN(), schema, slog.New(waiting)), p)
	// B tried the lock, found it held, and keeps nothing it did not win.
	select {
	case <-waiting.c:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not follow within 10s")
	}
	o.wantLeaderHolds(t, "while B follows")

	close(a.resign)
	b.term(t, "B")
	if second := o.wantLeaderHolds(t, "B's term"); second == first {
		t.Errorf("B's term is recorded under A's session %d", first)
	}
	a.stop(t)
	b.stop(t)
	poll.Until(t, 10*time.Second, "the lock gone once every Lead returned", func() error {
		if h := o.holders(t); len(h) != 0 {
			return fmt.Errorf("held by sessions %v", h)
		}
		return nil
	})
}

// An administrator's pg_terminate_backend of the leader's session drops
// its lock; the leader's next renewal finds the connection gone and ends
// the term with ErrLeaseLost. The campaign goes on: on a new session it
// wins again (the lease is its own), with a higher fence and the lock on
// the new session.
func TestTerminatedSessionEndsTerm(t *testing.T) {
	const lease = time.Second
	pg := testserver.SharedPostgres(t)
	schema := freshSchema()
	p := leader.Params{Name: "fanout", Replica: "A", Lease: lease}
	a := startCampaign(t, elector(t, pg.DSN(), schema, slog.New(slog.DiscardHandler)), p)
	first := a.term(t, "A")
	o := observe(t, pg.DSN(), schema, p.Name)
	pid := o.wantLeaderHolds(t, "the first term")

	var ok bool
	if err := o.conn.QueryRow(t.Context(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the leader's session %d: %v, %v", pid, ok, err)
	}
	terminated := time.Now()
	var e end
	select {
	case e = <-a.ends:
	case <-time.After(lease + 5*time.Second):
		t.Fatal("the term outlived its session")
	}
	if !errors.Is(e.cause, leader.ErrLeaseLost) {
		t.Errorf("the term ended with %v, want ErrLeaseLost", e.cause)
	}
	next := a.term(t, "A, again,")
	if !e.at.Before(next.Start) || next.Fence <= first.Fence {
		t.Errorf("the next term began at %v with fence %d; want after the first's end at %v, above fence %d",
			next.Start, next.Fence, e.at, first.Fence)
	}
	if again := o.wantLeaderHolds(t, "the next term"); again == pid {
		t.Errorf("the next term is recorded under the terminated session %d", pid)
	}
	t.Logf("terminate → term ended %v → next term %v later (lease %v)",
		e.at.Sub(terminated).Round(time.Millisecond), next.Start.Sub(e.at).Round(time.Millisecond), lease)
}

// signal is a slog.Handler whose channel c is closed at the first record
// with message msg.
type signal struct {
	msg  string
	c    chan struct{}
	once *sync.Once
}

func logged(msg string) signal { return signal{msg: msg, c: make(chan struct{}), once: new(sync.Once)} }

func (s signal) Enabled(context.Context, slog.Level) bool { return true }
func (s signal) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s signal) WithGroup(string) slog.Handler            { return s }

func (s signal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == s.msg {
		s.once.Do(func() { close(s.c) })
	}
	return nil
}
