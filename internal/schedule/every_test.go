package schedule

import (
	"slices"
	"testing"
	"time"
)

// "@every" slots are anchored to the epoch: two processes that start at
// different times, in different zones, compute the same slots.
func TestEveryAnchoredToEpoch(t *testing.T) {
	a := mustParse(t, "@every 7s", "")
	b := mustParse(t, "@every 7s", "Australia/Lord_Howe")
	startA := mustTime(t, "2026-03-29T00:59:58.250Z")
	startB := startA.Add(3*time.Second + 123*time.Millisecond)

	var slotsA, slotsB []time.Time
	for x, i := startA, 0; i < 20; i++ {
		x = a.Next(x)
		slotsA = append(slotsA, x)
	}
	for x, i := startB, 0; i < 20; i++ {
		x = b.Next(x)
		slotsB = append(slotsB, x)
	}
	for i, x := range slotsA {
		if x.Unix()%7 != 0 {
			t.Fatalf("slot %v is %d s after the epoch, not a multiple of 7", x, x.Unix())
		}
		if i > 0 && x.Sub(slotsA[i-1]) != 7*time.Second {
			t.Fatalf("slots %v and %v are not 7s apart", slotsA[i-1], x)
		}
	}
	// startB is less than 7s after startA, so its slots are those of A
	// from the first or second one on.
	if !slices.Equal(slotsB[:18], slotsA[1:19]) && !slices.Equal(slotsB[:19], slotsA[:19]) {
		t.Fatalf("slots differ by start time:\n%v\n%v", slotsA, slotsB)
	}
	if got, want := a.Prev(slotsA[3].Add(6*time.Second)), slotsA[3]; !got.Equal(want) {
		t.Fatalf("Prev = %v, want %v", got, want)
	}
}

func TestEveryBeforeEpoch(t *testing.T) {
	s := mustParse(t, "@every 1h", "")
	if got, want := s.Next(mustTime(t, "1969-12-31T22:30:00Z")), mustTime(t, "1969-12-31T23:00:00Z"); !got.Equal(want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}
	if got, want := s.Prev(mustTime(t, "1969-12-31T22:30:00Z")), mustTime(t, "1969-12-31T22:00:00Z"); !got.Equal(want) {
		t.Fatalf("Prev = %v, want %v", got, want)
	}
}
