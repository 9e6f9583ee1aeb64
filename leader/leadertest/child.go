package leadertest

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"
)

// child is a failover child process and the lines it logged.
type child struct {
	cmd    *exec.Cmd
	events chan event // closed when its stdout closes
	killed bool
}

// event is one JSON line the child's elector logged.
type event struct {
	msg  string
	sent time.Time     // of an Acquire or renewal (wall clock)
	rtt  time.Duration // its round trip
}

// extended estimates when the store extended the lease: halfway through
// the round trip.
func (e event) extended() time.Time { return e.sent.Add(e.rtt / 2) }

// read turns the child's stdout into events; lines that are not the
// elector's JSON (the test binary's own) are skipped.
func (c *child) read(out io.Reader) {
	defer close(c.events)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var rec struct {
			Msg  string    `json:"msg"`
			Sent time.Time `json:"sent"`
			RTT  int64     `json:"rtt"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Msg == "" {
			continue
		}
		c.events <- event{msg: rec.Msg, sent: rec.Sent, rtt: time.Duration(rec.RTT)}
	}
}

// await returns the next event with msg, skipping others, or fails t.
func (c *child) await(t *testing.T, msg string, timeout time.Duration) event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("the failover child exited before logging %q", msg)
			}
			if ev.msg == msg {
				return ev
			}
		case <-deadline:
			t.Fatalf("the failover child logged no %q within %v", msg, timeout)
		}
	}
}

// kill sends SIGKILL and waits for the child to exit. It is safe to call
// more than once.
func (c *child) kill(t *testing.T) {
	if c.killed {
		return
	}
	c.killed = true
	if err := c.cmd.Process.Kill(); err != nil {
		t.Errorf("kill the failover child: %v", err)
	}
	_ = c.cmd.Wait()
}

// rest returns the events the child logged that were not read yet; call it
// after kill.
func (c *child) rest() []event {
	var out []event
	for ev := range c.events {
		out = append(out, ev)
	}
	return out
}
