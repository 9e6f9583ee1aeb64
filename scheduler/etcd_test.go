package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// Three replicas configured with store.kind etcd, on a real 3-member
// cluster, run a job every second and lead a duty while the cluster's
// leader is killed and restarted: every slot of the window runs exactly
// once, each to its end, and the duty always has one leader at a time,
// elected on etcd (its fences are etcd revisions, so they keep growing
// across the kill). The lease is 4 s: writes stall while etcd elects a new
// leader, and with 2 s a run that ends just after the kill may not record
// its finish within its trust window, and runs again (docs/stores.md, etcd).
func TestEtcdReplicasSurviveTheLeadersDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	t.Parallel()
	cluster := testserver.StartEtcd(t, testserver.EtcdConfig{})
	endpoints := `["` + strings.Join(cluster.Endpoints(), `", "`) + `"]`
	conf := fmt.Sprintf("store: {kind: etcd, etcd: {endpoints: %s, prefix: %q}}\n", endpoints, t.Name()) +
		"shutdown_grace: 2s\n" +
		"jobs: {tick: {schedule: \"* * * * * *\", lease: 4s, starting_deadline: 10s}}\n" +
		"duties: {fanout: {lease: 4s}}\n"
	path := filepath.Join(t.TempDir(), "slotcron.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{sleep: 100 * time.Millisecond}
	terms := &termLog{}
	reg := jobs.NewRegistry()
	reg.Register("tick", rec.fn)
	reg.RegisterDuty("fanout", terms.duty)

	var stops []func()
	for i := range 3 {
		cfg, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Replica = fmt.Sprintf("r%d", i)
		s, err := New(cfg, reg, WithLogger(testLogger()))
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, start(t, s))
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	poll.Until(t, 30*time.Second, "the first runs and the duty's first term", func() error {
		if _, most := terms.snapshot(); len(rec.snapshot()) < 3 || most != 1 {
			return fmt.Errorf("%d runs, %d terms at most at once", len(rec.snapshot()), most)
		}
		return nil
	})
	from := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(2 * time.Second)
	old := cluster.Leader()
	if old == nil {
		t.Fatal("the cluster has no leader")
	}
	old.Kill()
	time.Sleep(3 * time.Second)
	if err := old.Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	to := time.Now().Truncate(time.Second).Add(-time.Second)
	// Slots up to to run within their starting deadline.
	poll.Until(t, 30*time.Second, "every slot of the window run", func() error {
		seen := map[time.Time]bool{}
		for _, ev := range rec.snapshot() {
			seen[ev.run.Slot] = true
		}
		for s := from; !s.After(to); s = s.Add(time.Second) {
			if !seen[s.UTC()] {
				return fmt.Errorf("slot %v not run", s.UTC())
			}
		}
		return nil
	})
	for _, stop := range stops {
		stop()
	}
	stops = nil

	runs := map[time.Time][]event{}
	var last int64
	for _, ev := range rec.snapshot() {
		runs[ev.run.Slot] = append(runs[ev.run.Slot], ev)
		if ev.run.Fence <= last {
			t.Errorf("fence %d after %d", ev.run.Fence, last)
		}
		last = ev.run.Fence
	}
	for s := from; !s.After(to); s = s.Add(time.Second) {
		if evs := runs[s.UTC()]; len(evs) != 1 || !evs[0].finished {
			t.Errorf("slot %s: %d runs (%+v), want one that finished", s.UTC().Format(time.TimeOnly), len(evs), evs)
		}
	}
	ts, most := terms.snapshot()
	if most != 1 {
		t.Errorf("%d leaders of the duty at once", most)
	}
	for i := 1; i < len(ts); i++ {
		if ts[i].fence <= ts[i-1].fence {
			t.Errorf("duty fences %d then %d", ts[i-1].fence, ts[i].fence)
		}
	}

	// The markers say the same: done, succeeded, each once.
	st, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: cluster.Endpoints(), Prefix: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hist, err := st.History(context.Background(), slotstore.HistoryParams{Job: "tick", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, m := range hist {
		if !m.Slot.Before(from) && !m.Slot.After(to) {
			if m.State != slotstore.StateDone || m.Outcome != slotstore.Succeeded {
				t.Errorf("marker %s: %s %s", m.Slot.Format(time.TimeOnly), m.State, m.Outcome)
			}
			done++
		}
	}
	if want := int(to.Sub(from)/time.Second) + 1; done != want {
		t.Errorf("%d markers in the window, want %d", done, want)
	}
}
