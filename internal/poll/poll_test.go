package poll

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fatal records the failure of Until in place of failing the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// until runs Until as a test's goroutine would, and returns its failure.
func until(t *testing.T, within time.Duration, what string, ready func() error) string {
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(f, within, what, ready)
	}()
	<-done
	return f.msg
}

// TestUntilReturnsOnceReady: Until returns as soon as ready holds, having
// asked again and again before.
func TestUntilReturnsOnceReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start, asks := time.Now(), 0
		msg := until(t, time.Minute, "the fifth ask", func() error {
			if asks++; asks < 5 {
				return fmt.Errorf("%d asks", asks)
			}
			return nil
		})
		if msg != "" || asks != 5 {
			t.Errorf("failed %q after %d asks, want no failure after 5", msg, asks)
		}
		if took := time.Since(start); took > 20*time.Millisecond {
			t.Errorf("took %v to see the fifth ask, want the first waits short", took)
		}
	})
}

// TestUntilFailsSayingWhatIsMissing: past its bound Until fails naming
// what it waited for and ready's last word, having waited no longer than
// one wait past the bound and asked no more often than every 50 ms late on.
func TestUntilFailsSayingWhatIsMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start, asks := time.Now(), 0
		msg := until(t, 10*time.Second, "the answer", func() error {
			asks++
			return errors.New("still no answer")
		})
		if !strings.Contains(msg, "10s for the answer: still no answer") {
			t.Errorf("failure %q, want the bound, what was awaited and the last error", msg)
		}
		if took := time.Since(start); took < 10*time.Second || took > 10*time.Second+maxWait {
			t.Errorf("failed after %v, want within %v of 10s", took, maxWait)
		}
		if asks > int(10*time.Second/maxWait)+10 {
			t.Errorf("asked %d times in 10 s", asks)
		}
	})
}
