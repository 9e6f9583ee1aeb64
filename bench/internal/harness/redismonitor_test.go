package harness

import (
	"bufio"
	"strings"
	"testing"
)

func TestRedisMonitorCounts(t *testing.T) {
	feed := strings.Join([]string{
		`+99.900000 [0 127.0.0.1:50001] "evalsha" "abc" "1" "k"`, // before the window
		`+100.000000 [0 127.0.0.1:50001] "evalsha" "abc" "1" "k"`,
		`+100.000010 [0 lua] "hget" "k" "f"`,
		`+100.000020 [0 lua] "hset" "k" "f" "v"`,
		`+100.100000 [0 127.0.0.1:50002] "multi"`,
		`+100.100010 [0 127.0.0.1:50002] "smembers" "p"`,
		`+100.100020 [0 127.0.0.1:50001] "EVALSHA" "abc" "0"`,
		`+100.100030 [0 127.0.0.1:50002] "hgetall" "n"`,
		`+100.100040 [0 127.0.0.1:50002] "exec"`,
		`+100.200000 [0 127.0.0.1:50002] "ping"`,
		`+101.000000 [0 127.0.0.1:50001] "evalsha" "abc" "1" "k"`, // after it
	}, "\r\n") + "\r\n"
	m := &redisMonitor{t0: 100, t1: 101, done: make(chan struct{}),
		c: redisCounts{byName: map[string]int64{}}, multi: map[string]bool{}}
	m.read(bufio.NewReader(strings.NewReader(feed)))
	c := m.c
	if c.commands != 7 || c.scripts != 2 || c.inner != 2 || c.blocks != 1 || c.folded != 3 || c.roundTrips() != 4 {
		t.Errorf("commands %d scripts %d inner %d blocks %d folded %d round trips %d; want 7 2 2 1 3 4",
			c.commands, c.scripts, c.inner, c.blocks, c.folded, c.roundTrips())
	}
	if c.byName["evalsha"] != 2 || c.byName["smembers"] != 1 || c.byName["ping"] != 1 {
		t.Errorf("by name %v", c.byName)
	}
}
