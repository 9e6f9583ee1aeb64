package engine

import (
	"testing"
	"time"
)

// A failed slot's retry waits the backoff, and its window closes at the
// starting deadline.
func TestRetryAt(t *testing.T) {
	p := &plan{deadline: 10 * time.Second, retries: Retries{Max: 10, Backoff: 4 * time.Second}, sched: mustSchedule(t, "@every 1h")}
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if at, ok := p.retryAt(slot, 1, slot.Add(time.Second)); !ok || !at.Equal(slot.Add(5*time.Second)) {
		t.Errorf("first retry at %v %v", at, ok)
	}
	if _, ok := p.retryAt(slot, 2, slot.Add(5*time.Second)); ok {
		t.Errorf("a retry at +13s passed the 10s starting deadline")
	}
}
