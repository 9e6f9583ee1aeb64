package fence_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// The field's scenario: holder A claims a slot with a 300 ms lease and
// pauses for 400 ms; B takes the slot over with the next fence and writes;
// A wakes and writes with its old fence, and the resource rejects it; A's
// release leaves B's claim intact.
const (
	scenarioLease = 300 * time.Millisecond
	scenarioPause = 400 * time.Millisecond
)

// nextMinute returns the start of the next minute: a slot no older than
// the job's generation in a store that first sees the job now, so its
// first claim wins (an older one would be refused as possibly lost).
func nextMinute() time.Time { return time.Now().UTC().Truncate(time.Minute).Add(time.Minute) }

// holders plays A and B against store: claim is A's first claim, and
// takeover is B's, made after A's pause.
type holders struct {
	t        *testing.T
	store    slotstore.Store
	slot     time.Time
	resource string // what A and B write
}

func (h holders) claim(replica string, lease time.Duration) slotstore.Claim {
	h.t.Helper()
	res, err := h.store.Claim(h.t.Context(), slotstore.ClaimParams{Replica: replica,
		Requests: []slotstore.ClaimRequest{{Job: "report", Slot: h.slot, Lease: lease}}})
	if err != nil {
		h.t.Fatalf("claim by %s: %v", replica, err)
	}
	if res[0].Status != slotstore.Won {
		h.t.Fatalf("claim by %s: %v, want won", replica, res[0].Status)
	}
	return res[0].Claim
}

// play runs the scenario; write is the resource's fenced write.
func (h holders) play(write func(who string, token int64) error) (a, b slotstore.Claim, stale error) {
	t := h.t
	a = h.claim("A", scenarioLease)
	if err := write("A", a.Fence); err != nil {
		t.Fatalf("A's write within its lease: %v", err)
	}
	time.Sleep(scenarioPause) // A is paused; its lease ends meanwhile.
	b = h.claim("B", time.Minute)
	if b.Fence <= a.Fence || !b.Takeover() || b.PrevHolder != "A" {
		t.Fatalf("B's claim %+v does not take over A's (fence %d)", b, a.Fence)
	}
	if err := write("B", b.Fence); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	stale = write("A", a.Fence) // A wakes and writes, unaware.
	wantStale(t, stale, h.resource, a.Fence, b.Fence)

	if err := h.store.Release(t.Context(), a.Ref); !errors.Is(err, slotstore.ErrLeaseLost) {
		t.Fatalf("A's release: %v, want ErrLeaseLost", err)
	}
	ms, err := h.store.History(t.Context(), slotstore.HistoryParams{Job: "report"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("history: %v, %v", ms, err)
	}
	if m := ms[0]; m.State != slotstore.StateRunning || m.Holder != "B" || m.Fence != b.Fence {
		t.Fatalf("after A's release the marker is %s by %s fence %d, want running by B fence %d", m.State, m.Holder, m.Fence, b.Fence)
	}
	if err := h.store.Renew(t.Context(), slotstore.RenewParams{Ref: b.Ref, Lease: time.Minute}); err != nil {
		t.Fatalf("B renews after A's release: %v", err)
	}
	return a, b, stale
}

func TestScenarioRedis(t *testing.T) {
	srv := testserver.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer c.Close()
	store, err := redisstore.New(c, redisstore.Options{Prefix: "scenario:"})
	if err != nil {
		t.Fatal(err)
	}
	var l testlog.Buffer
	res := fence.Redis{Client: c, Prefix: "scenario:fence:", Logger: slog.New(slog.NewJSONHandler(&l, nil))}
	key := unique("report")

	h := holders{t: t, store: store, slot: nextMinute(), resource: key}
	_, b, _ := h.play(func(who string, token int64) error {
		return res.Set(t.Context(), key, token, []byte("written by "+who), 0)
	})

	v, f, err := res.Get(t.Context(), key)
	if err != nil || string(v) != "written by B" || f != b.Fence {
		t.Errorf("the resource holds %q fence %d (%v), want B's write, fence %d", v, f, err, b.Fence)
	}
	if got := rejected(t, key); got != 1 {
		t.Errorf("slotcron_fence_rejections_total{resource=%q} = %v, want 1", key, got)
	}
	if recs := l.Logged(t, "fence rejected"); len(recs) != 1 || recs[0]["resource"] != key {
		t.Errorf("rejection log lines %v, want one for %s", recs, key)
	}
}

// The same with fence.CheckPG: each write is an INSERT checked in its own
// transaction; A's late INSERT rolls back with the rejection.
func TestScenarioPG(t *testing.T) {
	pool, p := pgFence(t) // p's schema holds the effects table
	if err := (fence.PG{}).Ensure(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	resource := unique("report")
	h := holders{t: t, store: memstore.New(memstore.Options{}), slot: nextMinute(), resource: resource}
	_, b, _ := h.play(func(who string, token int64) error {
		return pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			if err := fence.CheckPG(t.Context(), tx, resource, token); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), "INSERT INTO "+p.Schema+".effects VALUES ($1, $2, $3)", resource, who, token)
			return err
		})
	})
	// A's first write, within its lease, and B's; A's late insert rolled back.
	if got := effects(t, pool, p, resource); len(got) != 2 || got[0] != "A" || got[1] != "B" {
		t.Errorf("effects %v, want [A B]", got)
	}
	var highest int64
	err := pool.QueryRow(t.Context(), "SELECT fence FROM "+fence.DefaultSchema+".fence_highest WHERE resource = $1", resource).Scan(&highest)
	if err != nil || highest != b.Fence {
		t.Errorf("highest fence %d (%v), want B's %d", highest, err, b.Fence)
	}
}
