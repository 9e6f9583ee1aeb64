package chaos

import (
	"sync"
	"testing"
	"time"
)

// An armed fault is taken once, however many runs reach its point at
// once; disarming one that was taken reports false.
func TestControlTakesOnce(t *testing.T) {
	c := control{dir: t.TempDir()}
	if got := c.take("r1", pointAfterEffect); got != "" {
		t.Fatalf("take with nothing armed = %q", got)
	}
	if err := c.arm("r1", pointAfterEffect, actStop); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make(chan string, 8)
	for range 8 {
		wg.Go(func() { got <- c.take("r1", pointAfterEffect) })
	}
	wg.Wait()
	close(got)
	var taken []string
	for a := range got {
		if a != "" {
			taken = append(taken, a)
		}
	}
	if len(taken) != 1 || taken[0] != actStop {
		t.Fatalf("taken %q, want one %q", taken, actStop)
	}
	if c.disarm("r1", pointAfterEffect, actStop) {
		t.Fatal("disarm succeeded after the fault was taken")
	}
	if !c.taken("r1", pointAfterEffect, actStop) || c.taken("r1", pointAfterEffect, actStop) {
		t.Fatal("taken should report the take once")
	}
}

func TestControlClockOffset(t *testing.T) {
	c := control{dir: t.TempDir()}
	if d, err := c.offset("r1"); err != nil || d != 0 {
		t.Fatalf("offset with no file = %v, %v", d, err)
	}
	if err := c.setOffset("r1", -61*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := c.offset("r1"); err != nil || d != -61*time.Second {
		t.Fatalf("offset = %v, %v; want -1m1s", d, err)
	}
}
