package netclock

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The etcd store's clock is "the members' time", yet Sync
// measures the first URL that answers and ignores the others: two replicas
// whose lists name the same members in another order (or one whose first
// member was down when it opened) judge leases by different members'
// clocks, and nothing says the members disagree. Here two servers 3 s
// apart are measured by two clocks of the same URLs in opposite orders:
// the clocks must agree, or Sync must refuse servers that disagree.
func TestServersThatDisagree(t *testing.T) {
	a, b := shifted(t, 0), shifted(t, 3*time.Second)
	var clocks []*Clock
	var errs []error
	for _, urls := range [][]string{{a.URL, b.URL}, {b.URL, a.URL}} {
		c, err := New(Options{URLs: urls})
		if err != nil {
			t.Fatal(err)
		}
		clocks = append(clocks, c)
		errs = append(errs, c.Sync(t.Context()))
	}
	if errs[0] != nil && errs[1] != nil {
		return // both refused servers that disagree
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("one order of the same servers measured, the other not: %v; %v", errs[0], errs[1])
	}
	if d := clocks[0].Now().Sub(clocks[1].Now()); d.Abs() > time.Second {
		t.Errorf("two clocks of the same servers, listed in other orders, are %v apart", d)
	}
}

// A measurement that places the server behind the last makes
// Now stand still until the server's time catches up, however long that
// is: after a member's clock steps back 3 s (or a resync lands on another
// member 3 s behind), a replica's store clock stops for 3 s. Every lease
// end it writes meanwhile is the same instant, so its renewals no longer
// extend its lease as the other replicas (which measure again at their own
// time, up to Resync later) judge it, and a holder renewing on time loses
// its slot to a takeover. The clock must keep moving (slew back, or go
// back), not stop for as long as the step.
func TestClockMovesAfterAStepBack(t *testing.T) {
	var skew atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(time.Duration(skew.Load())).UTC().Format(http.TimeFormat))
	}))
	defer srv.Close()
	c, err := New(Options{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Now() // the store reads its clock all the time
	skew.Store(int64(-3 * time.Second))
	if err := c.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	from, began := c.Now(), time.Now()
	time.Sleep(time.Second)
	moved, real := c.Now().Sub(from), time.Since(began)
	if moved < real/2 {
		t.Errorf("after the server's clock stepped back 3 s, Now moved %v in %v", moved, real)
	}
}
