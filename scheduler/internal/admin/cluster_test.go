package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// downStore, a store of the package admin (so its kind is "admin"), fails
// the reads the admin API makes while down is set.
type downStore struct {
	slotstore.Store
	down atomic.Bool
}

var errDown = errors.New("test: connection refused")

func (d *downStore) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	if d.down.Load() {
		return nil, errDown
	}
	return d.Store.History(ctx, p)
}

func (d *downStore) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	if d.down.Load() {
		return slotstore.Pauses{}, errDown
	}
	return d.Store.Pauses(ctx)
}

func (d *downStore) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	if d.down.Load() {
		return nil, errDown
	}
	return d.Store.Replicas(ctx)
}

// GET /api/cluster lists the replicas by their beats, with the slots each
// holds, the duties with their leaders, the store's health and the cluster
// pause; a store that fails is named, and the answer still comes.
func TestCluster(t *testing.T) {
	var ds *downStore
	r := newRig(t, rigConfig{
		jobs: []engine.JobSpec{spec(t, "report", never, "")},
		duties: []engine.DutySpec{{Name: "fanout", Lease: 3 * time.Second, Fn: func(ctx context.Context, _ jobs.Duty) error {
			<-ctx.Done()
			return nil
		}}},
		store: func(st slotstore.Store) slotstore.Store {
			ds = &downStore{Store: st}
			return ds
		},
		before: func(r *rig) {
			// c beat ten seconds ago, for a second.
			r.lag.Store(int64(10 * time.Second))
			if err := r.st.Beat(t.Context(), slotstore.Beat{Replica: "c", Version: "v0.9.0", TTL: time.Second}); err != nil {
				t.Fatal(err)
			}
			r.lag.Store(0)
		},
	})
	ctx := t.Context()
	if err := r.st.Beat(ctx, slotstore.Beat{Replica: "b", Version: "v1.0.0", Started: time.Now().Add(-time.Hour), TTL: time.Minute,
		Duties: []slotstore.DutyTerm{{Name: "other", Fence: 99, Since: time.Now().Add(-time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	born := r.enroll(t, "report")
	r.marker(t, "report", born.Add(time.Minute), "b", "run", false)
	r.marker(t, "report", born.Add(2*time.Minute), "zed", "run", false)

	var c clusterView
	poll.Until(t, 15*time.Second, "a to beat and lead fanout", func() error {
		c = clusterView{}
		r.get(t, "/api/cluster", &c)
		if len(c.Replicas) == 0 || c.Replicas[0].Seen == "" || len(c.Duties) == 0 || c.Duties[0].Leader != "a" {
			return fmt.Errorf("cluster: %+v", c)
		}
		return nil
	})
	if c.Replica != "a" || c.Version == "" || c.Started == "" || c.Store.Kind != "admin" || !c.Store.OK || c.Store.Error != "" ||
		c.Running != 2 || c.Paused || len(c.Errors) != 0 {
		t.Errorf("cluster: %+v", c)
	}
	var got []string
	for _, v := range c.Replicas {
		var duties []string
		for _, d := range v.Duties {
			duties = append(duties, d.Name)
		}
		got = append(got, strings.Join([]string{v.Name, map[bool]string{true: "live", false: "gone"}[v.Live],
			map[bool]string{true: "this", false: "-"}[v.This], v.Version, map[bool]string{true: "seen", false: "unseen"}[v.Seen != ""],
			string(rune('0' + v.Running)), strings.Join(duties, "+")}, " "))
	}
	want := []string{
		"a live this " + r.e.Build().Version + " seen 0 fanout",
		"b live - v1.0.0 seen 1 other",
		"c gone - v0.9.0 seen 0 ",
		"zed gone -  unseen 1 ",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("replicas:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(c.Duties) != 2 {
		t.Fatalf("duties %+v, want fanout and other", c.Duties)
	}
	if f := c.Duties[0]; f.Name != "fanout" || f.Leader != "a" || f.Fence <= 0 || f.Since == "" || f.Here == nil ||
		!f.Here.Leading || f.Here.Fence != f.Fence || f.Here.Lease != "3s" {
		t.Errorf("fanout: %+v here %+v", f, f.Here)
	}
	if o := c.Duties[1]; o.Name != "other" || o.Leader != "b" || o.Fence != 99 || o.Here != nil {
		t.Errorf("other: %+v", o)
	}

	// The cluster pause, with its note.
	if code, _, body := r.do(t, "POST", "/api/pause", `{"reason": "store upgrade", "by": "carol"}`, true); code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, _, body := r.do(t, "POST", "/api/pause?job=report&reason=x", "", true); code != http.StatusOK {
		t.Fatalf("pause report: %d %s", code, body)
	}
	c = clusterView{}
	r.get(t, "/api/cluster", &c)
	if !c.Paused || c.Pause == nil || c.Pause.By != "carol" || c.Pause.Reason != "store upgrade" || c.Pause.At == "" ||
		strings.Join(c.PausedJobs, ",") != "report" {
		t.Errorf("paused cluster: paused %v, note %+v, jobs %v", c.Paused, c.Pause, c.PausedJobs)
	}

	// A store that fails: the cluster view names it; the jobs view fails.
	ds.down.Store(true)
	code, _, body := r.do(t, "GET", "/api/cluster", "", false)
	c = clusterView{}
	if err := json.Unmarshal([]byte(body), &c); err != nil || code != http.StatusOK {
		t.Fatalf("cluster with the store down: %d %s", code, body)
	}
	if c.Store.OK || !strings.Contains(c.Store.Error, errDown.Error()) || len(c.Errors) != 3 || !strings.HasPrefix(c.Errors[0], "store (reading the pauses): ") ||
		len(c.Replicas) != 1 || !c.Replicas[0].This {
		t.Errorf("cluster with the store down: store %+v, errors %q, replicas %+v", c.Store, c.Errors, c.Replicas)
	}
	code, _, body = r.do(t, "GET", "/api/jobs", "", false)
	wantError(t, "jobs with the store down", code, body, http.StatusServiceUnavailable, codeStore, "read pauses", errDown.Error())
	code, _, body = r.do(t, "GET", "/api/jobs/report/history", "", false)
	wantError(t, "history with the store down", code, body, http.StatusServiceUnavailable, codeStore, "read the history of report", errDown.Error())
	ds.down.Store(false)

	// The kind as configured.
	r.api = Handler(r.e, Options{Token: "s3cret", StoreKind: "sqlite"})
	c = clusterView{}
	r.get(t, "/api/cluster", &c)
	if c.Store.Kind != "sqlite" {
		t.Errorf("kind %q, want the configured sqlite", c.Store.Kind)
	}
}
