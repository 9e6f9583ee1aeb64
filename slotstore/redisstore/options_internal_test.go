package redisstore

import (
	"strings"
	"testing"
	"time"
)

func TestWaitTimeoutDefault(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{WaitReplicas: 1}, DefaultWaitTimeout},
		{Options{WaitReplicas: 1, ReadTimeout: time.Second}, 500 * time.Millisecond},
		{Options{WaitReplicas: 2, WaitTimeout: 50 * time.Millisecond}, 50 * time.Millisecond},
		{Options{}, 0},
	} {
		if err := c.o.Validate(); err != nil {
			t.Errorf("%+v: %v", c.o, err)
		}
		if o := c.o.withDefaults(); o.WaitTimeout != c.want {
			t.Errorf("%+v: wait timeout %v, want %v", c.o, o.WaitTimeout, c.want)
		}
	}
}

// TestAddrsMerged: Addr is the first address, before Addrs, and the
// caller's slice is left as it was.
func TestAddrsMerged(t *testing.T) {
	more := make([]string, 1, 4)
	more[0] = "r2:6379"
	o := Options{Addr: "r1:6379", Addrs: more}.withDefaults()
	if got := strings.Join(o.Addrs, ","); got != "r1:6379,r2:6379" || o.Addr != "" {
		t.Errorf("addr and addrs: %q (addr %q), want r1:6379,r2:6379", got, o.Addr)
	}
	if more[0] != "r2:6379" || len(more) != 1 {
		t.Errorf("the caller's addrs changed: %q", more)
	}
	if o := (Options{}).withDefaults(); len(o.Addrs) != 1 || o.Addrs[0] != DefaultAddr {
		t.Errorf("no address: %q, want %s", o.Addrs, DefaultAddr)
	}
}
