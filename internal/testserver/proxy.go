package testserver

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a target, and can
// fail them on demand. Its methods are called from the test's goroutine.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu         sync.Mutex
	ln         net.Listener // nil while cut
	blackholed bool
	delay      time.Duration // added before forwarding each read, both ways
	stopped    bool
	conns      map[net.Conn]struct{} // every open connection, both sides
	wg         sync.WaitGroup        // the accept loop and every copier
}

// StartProxy listens on a free loopback port and forwards every connection
// to target until t ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: proxy to %s: %v", target, err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.addr }

// Cut drops every connection and refuses new ones: the port is closed, so a
// dial fails before any request leaves the client.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.dropLocked()
}

// Blackhole keeps connections open, accepts new ones, and forwards nothing
// in either direction: a request leaves the client and its reply never comes.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackholed = true
}

// Delay holds every chunk of bytes for d before forwarding it, in both
// directions, so each request and each reply arrives d late. Restore ends
// it.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Restore forwards new connections again, without delay. Connections that
// lived through a blackhole are dropped, since bytes of their streams were
// lost.
func (p *Proxy) Restore() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = 0
	if p.blackholed {
		p.blackholed = false
		p.dropLocked()
	}
	if p.ln != nil || p.stopped {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("testserver: proxy: listen again on %s: %v", p.addr, err)
	}
	p.serveLocked(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

// serveLocked accepts connections on ln until it is closed.
func (p *Proxy) serveLocked(ln net.Listener) {
	p.ln = ln
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.handle(client)
		}
	})
}

// handle connects client to the target, or holds it silent while
// blackholed.
func (p *Proxy) handle(client net.Conn) {
	p.mu.Lock()
	blackholed := p.blackholed
	if !p.track(client) {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if blackholed {
		p.wg.Go(func() { p.pipe(client, nil) })
		return
	}
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.close(client)
		return
	}
	p.mu.Lock()
	ok := p.track(server)
	p.mu.Unlock()
	if !ok {
		p.close(client)
		return
	}
	p.wg.Go(func() { p.pipe(client, server) })
	p.wg.Go(func() { p.pipe(server, client) })
}

// pipe copies src to dst, dropping what it reads while blackholed (and
// always when dst is nil), until either side closes; then it closes both.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.close(src)
	if dst != nil {
		defer p.close(dst)
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if d := p.delayNow(); n > 0 && d > 0 {
			time.Sleep(d)
		}
		if n > 0 && dst != nil && !p.isBlackholed() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) delayNow() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

func (p *Proxy) isBlackholed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackholed
}

// track records c as open, or closes it and reports false once stopped.
func (p *Proxy) track(c net.Conn) bool {
	if p.stopped {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) close(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// dropLocked closes every open connection; their copiers then end.
func (p *Proxy) dropLocked() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// stop closes the listener and every connection and waits for every
// goroutine the proxy started.
func (p *Proxy) stop() {
	p.mu.Lock()
	p.stopped = true
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
}
