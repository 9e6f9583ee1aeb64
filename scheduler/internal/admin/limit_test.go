package admin

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// The limiter remembers a bounded number of clients whatever the number
// of addresses failing: beyond its bound they share one bucket, and the
// clients whose buckets refilled are forgotten.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter()
	l.max = 8
	now := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return now }
	for i := range 1000 {
		l.fail(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}))
		if n := len(l.clients); n > l.max+1 {
			t.Fatalf("after %d addresses, %d clients remembered, want at most %d", i+1, n, l.max+1)
		}
	}
	newcomer := netip.MustParseAddr("192.0.2.99")
	if l.allow(newcomer) {
		t.Error("a newcomer beside a full map is allowed, though the shared bucket is empty")
	}
	now = now.Add(time.Hour) // every bucket refills
	l.fail(newcomer)
	if _, ok := l.clients[newcomer]; !ok || len(l.clients) > 2 {
		t.Errorf("after the buckets refilled: %d clients, newcomer remembered %v; want the refilled ones forgotten", len(l.clients), ok)
	}
}

// An IPv6 client is limited by its /64, which one host commonly holds
// whole; an IPv4 one by its address; an IPv4-mapped IPv6 one as IPv4.
func TestClientOf(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.1:1234":             "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::",
		"[2001:db8:1:2:ffff::1]:80":  "2001:db8:1:2::",
		"[::ffff:192.0.2.1]:1":       "192.0.2.1",
		"not an address":             "invalid IP",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := clientOf(r).String(); got != want {
			t.Errorf("%s: %s, want %s", remote, got, want)
		}
	}
}
