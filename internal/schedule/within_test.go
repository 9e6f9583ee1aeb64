package schedule

import (
	"testing"
	"time"
)

// TestWithin: bounds keep Next and Prev to the slots in [from, until],
// both inclusive, and leave the others as they were.
func TestWithin(t *testing.T) {
	s, err := Parse("*/10 * * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	b := s.Within(at(10, 10), at(10, 30))
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"next before from", b.Next(at(9, 0)), at(10, 10)},
		{"next just before from", b.Next(at(10, 9)), at(10, 10)},
		{"next inside", b.Next(at(10, 10)), at(10, 20)},
		{"next to until", b.Next(at(10, 25)), at(10, 30)},
		{"next at until", b.Next(at(10, 30)), time.Time{}},
		{"next after until", b.Next(at(11, 0)), time.Time{}},
		{"prev after until", b.Prev(at(12, 0)), at(10, 30)},
		{"prev inside", b.Prev(at(10, 25)), at(10, 20)},
		{"prev at from", b.Prev(at(10, 10)), at(10, 10)},
		{"prev before from", b.Prev(at(10, 9)), time.Time{}},
		{"unbounded next", s.Next(at(10, 30)), at(10, 40)},
		{"from only", s.Within(at(10, 10), time.Time{}).Next(at(23, 55)), at(0, 0).AddDate(0, 0, 1)},
		{"until only", s.Within(time.Time{}, at(10, 30)).Prev(at(9, 5)), at(9, 0)},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if from, until := b.Bounds(); !from.Equal(at(10, 10)) || !until.Equal(at(10, 30)) {
		t.Errorf("bounds %v %v", from, until)
	}
	if from, until := s.Bounds(); !from.IsZero() || !until.IsZero() {
		t.Errorf("bounds of an unbounded schedule: %v %v", from, until)
	}
}
