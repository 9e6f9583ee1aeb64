package etcdleader_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader/etcdleader"
)

// New refuses a nil client, a SessionTTL that is not a whole number of
// seconds of at least one, and a negative ClockSkew, naming the option; it
// accepts the zero value.
func TestNewOptions(t *testing.T) {
	c := newClient(t, "127.0.0.1:1") // New makes no request
	if _, err := etcdleader.New(nil, etcdleader.Options{}); err == nil || !strings.Contains(err.Error(), "nil client") {
		t.Errorf("New(nil): %v, want an error naming the nil client", err)
	}
	for _, ttl := range []time.Duration{-time.Second, 500 * time.Millisecond, 1500 * time.Millisecond} {
		_, err := etcdleader.New(c, etcdleader.Options{SessionTTL: ttl})
		if err == nil || !strings.Contains(err.Error(), "Options.SessionTTL "+ttl.String()) {
			t.Errorf("SessionTTL %v: %v, want an error naming Options.SessionTTL and the value", ttl, err)
		}
	}
	if _, err := etcdleader.New(c, etcdleader.Options{ClockSkew: -time.Millisecond}); err == nil || !strings.Contains(err.Error(), "Options.ClockSkew -1ms") {
		t.Errorf("ClockSkew -1ms: %v, want an error naming Options.ClockSkew and the value", err)
	}
	for _, ttl := range []time.Duration{0, time.Second, time.Minute} {
		if _, err := etcdleader.New(c, etcdleader.Options{SessionTTL: ttl}); err != nil {
			t.Errorf("SessionTTL %v: %v", ttl, err)
		}
	}
}
