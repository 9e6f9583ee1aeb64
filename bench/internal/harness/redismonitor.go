package harness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// redisCounts is what the server received in a window, read from MONITOR:
// every command a client sent (pipelined ones and those of a MULTI block
// each count), and apart from them the commands scripts ran inside the
// server.
type redisCounts struct {
	commands int64            // sent by clients
	byName   map[string]int64 // the same, by command (lower case)
	scripts  int64            // EVAL, EVALSHA, FCALL and their _ro forms, among commands
	inner    int64            // run by scripts inside the server; not in commands
	// blocks counts MULTI … EXEC blocks, and folded the commands in them
	// after the MULTI (the EXEC included): sent in one write, as go-redis's
	// TxPipelined sends them, a block is one network round trip.
	blocks, folded int64
}

// roundTrips is commands with each MULTI … EXEC block counted once.
func (c redisCounts) roundTrips() int64 { return c.commands - c.folded }

func (c redisCounts) plus(d redisCounts) redisCounts {
	out := redisCounts{commands: c.commands + d.commands, scripts: c.scripts + d.scripts, inner: c.inner + d.inner,
		blocks: c.blocks + d.blocks, folded: c.folded + d.folded, byName: map[string]int64{}}
	for k, v := range c.byName {
		out.byName[k] += v
	}
	for k, v := range d.byName {
		out.byName[k] += v
	}
	return out
}

// top names the n commands sent most, with their counts per unit.
func (c redisCounts) top(n int, per func(int64) string) string {
	names := make([]string, 0, len(c.byName))
	for k := range c.byName {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if c.byName[names[i]] != c.byName[names[j]] {
			return c.byName[names[i]] > c.byName[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for i, k := range names {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strings.ToUpper(k)+" "+per(c.byName[k]))
	}
	return strings.Join(parts, " · ")
}

var scriptCommands = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true}

// redisMonitor counts, from the server's MONITOR feed, the commands whose
// server timestamp falls in [t0, t1).
type redisMonitor struct {
	conn   net.Conn
	t0, t1 float64
	done   chan struct{}
	mu     sync.Mutex
	c      redisCounts
	multi  map[string]bool // client addresses inside a MULTI block
}

// monitorRedis opens a connection of its own to the private server and
// sends MONITOR; call it before t0, and wait after t1.
func (e *env) monitorRedis(ctx context.Context, t0, t1 time.Time) (*redisMonitor, error) {
	addr, err := e.redisAddr()
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 1<<20)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		conn.Close()
		return nil, fmt.Errorf("redis MONITOR: %q %v", line, err)
	}
	m := &redisMonitor{conn: conn, done: make(chan struct{}),
		t0: float64(t0.UnixMicro()) / 1e6, t1: float64(t1.UnixMicro()) / 1e6,
		c: redisCounts{byName: map[string]int64{}}, multi: map[string]bool{}}
	go m.read(br)
	return m, nil
}

// read counts lines such as
//
//	+1733570000.123456 [0 127.0.0.1:50123] "evalsha" "…" …
//	+1733570000.123470 [0 lua] "hget" "…" …
//
// until the connection closes.
func (m *redisMonitor) read(br *bufio.Reader) {
	defer close(m.done)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		ts, rest, ok := strings.Cut(strings.TrimPrefix(line, "+"), " [")
		if !ok {
			continue
		}
		at, err := strconv.ParseFloat(ts, 64)
		if err != nil || at < m.t0 || at >= m.t1 {
			continue
		}
		from, cmd, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		name := strings.ToLower(strings.Trim(strings.SplitN(cmd, " ", 2)[0], "\"\r\n"))
		f := strings.Fields(from)
		if len(f) != 2 {
			continue
		}
		m.mu.Lock()
		m.count(f[1], name)
		m.mu.Unlock()
	}
}

// count counts one command name sent by client (an address, or "lua"
// for a script's).
func (m *redisMonitor) count(client, name string) {
	if client == "lua" {
		m.c.inner++
		return
	}
	m.c.commands++
	m.c.byName[name]++
	if scriptCommands[name] {
		m.c.scripts++
	}
	switch {
	case name == "multi":
		m.multi[client] = true
		m.c.blocks++
	case m.multi[client]:
		m.c.folded++
		if name == "exec" || name == "discard" {
			delete(m.multi, client)
		}
	}
}

// stop waits a moment for lines of the window still in flight, closes the
// connection and returns the counts.
func (m *redisMonitor) stop() redisCounts {
	time.Sleep(500 * time.Millisecond)
	m.conn.Close()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.c
}
