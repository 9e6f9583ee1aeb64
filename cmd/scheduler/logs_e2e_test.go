package main

import (
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
)

// A replica whose Redis cannot be reached at start-up, with log.format
// json, writes nothing but JSON lines: what go-redis logs while dialling
// goes through the replica's logger too.
func TestUnreachableRedisLogsOnlyJSON(t *testing.T) {
	skipShort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	config := writeConfig(t, fmt.Sprintf("{kind: redis, redis: {addr: %q, dial_timeout: 1s}}", addr),
		"  tick: {run: hello, schedule: \"@hourly\"}\n")
	p := startReplica(t, "r", config)
	poll.Until(t, 20*time.Second, "three failed opens", func() error {
		if n := len(p.find("opening the store failed; retrying")); n < 3 {
			return fmt.Errorf("%d so far", n)
		}
		return nil
	})
	lines := p.lines()
	for _, line := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("not a JSON line: %s", line)
		}
	}
	if len(p.find("redis client")) == 0 {
		t.Error("go-redis's own complaint was not logged through the replica's logger")
	}
	t.Logf("%d lines, all JSON", len(lines))
}
