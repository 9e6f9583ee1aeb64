package scheduler

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
)

// TestSchedulesOnEveryStore: on SQLite, Redis, Postgres and etcd, three
// replicas run a schedule created, changed, paused, resumed and deleted
// while they run, through the HTTP API and the Go API: the first slot after
// each change follows it, no slot runs twice, fences grow.
func TestSchedulesOnEveryStore(t *testing.T) {
	onSharedStores(t, schedulesOnStore)
}

func schedulesOnStore(t *testing.T, open func() slotstore.Store) {
	rec := &recorder{}
	reg := jobs.NewRegistry()
	reg.Register("digest", rec.fn)
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	base, auth := "http://"+addr+"/api/schedules", []string{"Authorization", "Bearer s3cret"}
	for i, name := range []string{"a", "b", "c"} {
		doc := "shutdown_grace: 1s\ndefaults: {lease: 5s, starting_deadline: 3s}"
		if i == 0 {
			doc += "\nhttp: {listen: \"" + addr + "\", token: s3cret}"
		}
		stop := start(t, replica(t, open(), name, doc, reg))
		defer stop()
	}
	poll.Until(t, 20*time.Second, "the API", func() error {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if code, body := send(t, "POST", base, `{"id":"t/1","job":"digest","schedule":"* * * * * *","params":{"n":1}}`, auth...); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	waitRun(t, rec, "t/1", 1, time.Time{})
	code, body := send(t, "PUT", base+"/t%2F1", `{"job":"digest","schedule":"*/2 * * * * *","params":{"n":2}}`, auth...)
	changed := time.Now()
	if code != http.StatusOK {
		t.Fatalf("put: %d %s", code, body)
	}
	waitRun(t, rec, "t/1", 2, changed)
	api := NewSchedules(open(), nil, reg).By("test")
	if err := api.Pause(context.Background(), "t/1", "on hold"); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	time.Sleep(4 * time.Second)
	if err := api.Resume(context.Background(), "t/1"); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	waitRun(t, rec, "t/1", 2, resumed)
	if err := api.Delete(context.Background(), "t/1", 0); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	time.Sleep(3 * time.Second)
	checkScheduleRuns(t, rec, changed, paused, resumed, deleted)
}

// checkScheduleRuns checks the runs of schedulesOnStore against the
// instants of its changes.
func checkScheduleRuns(t *testing.T, rec *recorder, changed, paused, resumed, deleted time.Time) {
	t.Helper()
	seen := map[int64]bool{}
	var last int64
	for _, e := range rec.snapshot() { // sorted by fence
		r := e.run
		n := paramsOf(t, e)
		switch {
		case r.Job != "t/1":
			t.Errorf("a run of %s", r.Job)
		case seen[r.Slot.Unix()]:
			t.Errorf("slot %s ran twice", r.Slot)
		case r.Fence <= last:
			t.Errorf("fence %d after %d", r.Fence, last)
		case r.Slot.After(changed.Add(slotstore.ClaimLead)) && (n != 2 || r.Slot.Second()%2 != 0):
			// A slot claimed ahead before the change runs as claimed.
			t.Errorf("slot %s after the change ran with params %d", r.Slot, n)
		case r.Slot.After(paused.Add(2*time.Second)) && r.Slot.Before(resumed):
			t.Errorf("slot %s ran while paused", r.Slot)
		case r.Slot.After(deleted):
			t.Errorf("slot %s ran after the delete returned", r.Slot)
		}
		seen[r.Slot.Unix()], last = true, r.Fence
	}
	if len(seen) < 3 { // the first, one after the change, one after the resume
		t.Errorf("%d slots ran", len(seen))
	}
}
