package etcdstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// The store's clock is the members' (here on this host, so it reads as
// this host's, to within the measurement: a round trip, which a loaded
// machine can stretch to hundreds of milliseconds), or this process's with
// clock: local; any other source is refused, naming the key.
func TestClockSources(t *testing.T) {
	for _, src := range []string{"", etcdstore.ClockEtcd, etcdstore.ClockLocal} {
		s := openWith(t, etcdstore.Options{ClockSource: src})
		if d := time.Until(s.Now()); d.Abs() > time.Second {
			t.Errorf("clock %q reads %v from this host's", src, d)
		}
	}
	err := etcdstore.Options{ClockSource: "ntp"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `clock: "ntp": want etcd or local`) {
		t.Errorf("clock: ntp: %v", err)
	}
}
