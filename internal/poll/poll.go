// Package poll is how a test waits for what nothing tells it of: it asks
// again until the answer is yes, within a bound it states, and fails saying
// what it waited for and what was still missing.
package poll

import (
	"testing"
	"time"
)

// maxWait bounds the wait between two asks.
const maxWait = 50 * time.Millisecond

// Until calls ready until it returns nil, and fails t if it still returns
// an error when within has passed. The failure names what was awaited and
// gives ready's last error, which says what is still missing. ready may
// fail t itself on an error that waiting will not mend.
//
// Between calls it waits a millisecond, then twice as long each time up to
// 50 ms, so a condition that holds soon is seen soon and one that takes
// seconds is not asked a thousand times. Within a testing/synctest bubble
// the waits advance the bubble's clock, and within is on that clock.
//
// Bounds should be generous, many times what the wait takes on a quiet
// machine: tests share small CI machines, and a bound only decides how
// long a failing test takes to say so.
func Until(t testing.TB, within time.Duration, what string, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for wait := time.Millisecond; ; wait = min(2*wait, maxWait) {
		err := ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %v", within, what, err)
		}
		time.Sleep(wait)
	}
}
