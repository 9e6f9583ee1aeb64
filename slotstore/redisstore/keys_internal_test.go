package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/slotstore"
)

func TestHashSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for job, want := range map[string]int{
		"123456789": 0x31c3 % clusterSlots, // the CRC16/XMODEM check value
		"foo":       12182,
		"bar":       5061,
		"somekey":   11058,
	} {
		if got := hashSlot(job); got != want {
			t.Errorf("hashSlot(%q) = %d, want %d", job, got, want)
		}
	}
}

func TestKeysShareTheJobsTag(t *testing.T) {
	for _, job := range []string{"a", "}x", "{x}", "a}b", "%7B", "", "日本"} {
		k := keysOf("p:", job)
		tag := "{" + escape(job) + "}"
		for _, key := range []string{k.fence, k.gen, k.slots, k.expiry, k.running, k.pruned, k.markerKey(1)} {
			if got := key[len("p:") : len("p:")+len(tag)]; got != tag {
				t.Errorf("job %q: key %q does not start with the tag %q", job, key, tag)
			}
		}
	}
	seen := map[string]string{}
	for _, job := range []string{"a}", "a%7D", "a%257D", "{a", "%7Ba"} {
		e := escape(job)
		if other, dup := seen[e]; dup {
			t.Errorf("jobs %q and %q escape alike: %q", job, other, e)
		}
		seen[e] = job
	}
}

func TestNotRun(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{redis.ErrNoScript, true},
		{fmt.Errorf("wrapped: %w", redis.ErrPoolTimeout), true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{redisError("LOADING Redis is loading the dataset in memory"), true},
		{redisError("READONLY You can't write against a read only replica."), true},
		{redisError("MOVED 3999 127.0.0.1:6381"), true},
		{redisError("ERR user_script:1: Script attempted to access a non local key"), false},
		{redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{&net.OpError{Op: "read", Err: errors.New("i/o timeout")}, false},
		{io.EOF, false},
		{context.DeadlineExceeded, false},
	}
	for _, c := range cases {
		if got := notRun(c.err); got != c.want {
			t.Errorf("notRun(%v) = %v, want %v", c.err, got, c.want)
		}
		s := &Store{}
		if got := errors.Is(s.fail("op", c.err), slotstore.ErrOutcomeUnknown); got == c.want {
			t.Errorf("fail(%v): outcome unknown %v", c.err, got)
		}
	}
}

// redisError is an error reply as go-redis reports it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func TestScheduleKeysShareTheirTag(t *testing.T) {
	s := &Store{prefix: "p:"}
	for _, key := range []string{s.schedKey("live"), s.schedKey("head"), s.runKey("a"), s.runKey("}x{y}"), s.runKey("%7B")} {
		open := strings.IndexByte(key, '{')
		end := strings.IndexByte(key[open:], '}')
		if open < 0 || end < 0 || key[open:open+end+1] != "{p:sched}" {
			t.Errorf("key %q: its hash tag is not {p:sched}", key)
		}
	}
	if s.runKey("a{") == s.runKey("a%7B") {
		t.Error("two run jobs share an index")
	}
}
