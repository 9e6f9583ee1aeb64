package netclock

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// shifted serves a Date header of this host's clock shifted by skew.
func shifted(t *testing.T, skew time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server whose clock runs 37.3 s ahead is measured so, to within the
// spread the measurement reports (a few probe intervals on loopback).
func TestMeasuresAServerAhead(t *testing.T) {
	for _, skew := range []time.Duration{37300 * time.Millisecond, -2*time.Hour - 450*time.Millisecond} {
		c, err := New(Options{URLs: []string{shifted(t, skew).URL}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		off, spread, ok := c.Offset()
		if !ok || spread <= 0 || spread > time.Second {
			t.Fatalf("offset %v ± %v, %v", off, spread, ok)
		}
		if d := off - skew; d < -spread-5*time.Millisecond || d > spread+5*time.Millisecond {
			t.Errorf("skew %v measured as %v ± %v", skew, off, spread)
		}
		if d := c.Now().Sub(time.Now().Add(skew)); d.Abs() > spread+50*time.Millisecond {
			t.Errorf("Now is %v from the server's time", d)
		}
	}
}

// Before Sync the clock is this host's; a server that answers no Date,
// or none at all, fails Sync and names it.
func TestSyncFailures(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil
	}))
	defer bad.Close()
	c, err := New(Options{URLs: []string{bad.URL, "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(c.Now()); d.Abs() > time.Second {
		t.Errorf("unsynced Now is %v off", d)
	}
	if err := c.Sync(t.Context()); err == nil {
		t.Fatal("Sync of servers without a Date succeeded")
	}
	if _, _, ok := c.Offset(); ok {
		t.Error("Offset after a failed Sync")
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without URLs succeeded")
	}
}

// An etcd member serves a Date: its clock, here this host's, reads as
// this host's.
func TestEtcdMemberTime(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	e := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	c, err := New(Options{URLs: []string{e.Endpoints()[0] + "/version"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	off, spread, _ := c.Offset()
	if off.Abs() > spread+5*time.Millisecond {
		t.Errorf("an etcd member on this host is %v ± %v off", off, spread)
	}
}
