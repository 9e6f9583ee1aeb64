package admin

import (
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// The failed authentications a client may have: a bucket of failBurst that
// refills at failRate a second. A client whose bucket is empty is answered
// 429, until the bucket refills, unless its token is one of ours.
const (
	failBurst = 10
	failRate  = 2.0
	// maxClients bounds the clients the limiter remembers; beyond it, the
	// clients it does not know share one bucket.
	maxClients = 4096
)

// limiter counts failed authentications per client address (an IPv6
// address by its /64, which one host commonly holds whole). Its memory is
// bounded: a full bucket is forgotten at the next sweep, and once it
// remembers maxClients clients with failures to their name, every other
// client shares one bucket, so many addresses cannot grow it.
type limiter struct {
	rate, burst float64
	max         int
	now         func() time.Time

	mu      sync.Mutex
	clients map[netip.Addr]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter() *limiter {
	return &limiter{rate: failRate, burst: failBurst, max: maxClients, now: time.Now, clients: map[netip.Addr]*bucket{}}
}

// clientOf is the key of r's client: its address, an IPv6 one cut to its
// /64; the zero Addr when the address cannot be read.
func clientOf(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// level is b's tokens at now.
func (l *limiter) level(b *bucket, now time.Time) float64 {
	return min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
}

// allow reports whether client may try to authenticate: it has a failure
// left in its bucket.
func (l *limiter) allow(client netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[client]
	if b == nil && len(l.clients) >= l.max {
		b = l.clients[netip.Addr{}]
	}
	return b == nil || l.level(b, l.now()) >= 1
}

// fail takes a failure from client's bucket and reports whether that
// emptied it: the client is over the limit from now on.
func (l *limiter) fail(client netip.Addr) (over bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.clients[client]
	if b == nil {
		if len(l.clients) >= l.max {
			l.sweep(now)
		}
		k := client
		if len(l.clients) >= l.max {
			k = netip.Addr{}
			b = l.clients[k]
		}
		if b == nil {
			b = &bucket{tokens: l.burst, at: now}
			l.clients[k] = b
		}
	}
	left := l.level(b, now) - 1
	b.tokens, b.at = max(left, 0), now
	return left < 1
}

// sweep forgets the clients whose buckets have refilled, at most once a
// second (a full map would have every failure walk it).
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < time.Second {
		return
	}
	l.swept = now
	for k, b := range l.clients {
		if l.level(b, now) >= l.burst {
			delete(l.clients, k)
		}
	}
}
