package chaos

import (
	"testing"
	"time"
)

// Two first attempts of a slot under two fences are two holders of one
// attempt, unless the store lost its data between a claim made ahead of
// the slot and the later start (a job declared after_data_loss: run claims
// the slot anew after the loss, and either may start first).
func TestFenceOrderAcrossALossAfterAClaimMadeAhead(t *testing.T) {
	slot := time.Date(2026, 12, 7, 16, 20, 28, 0, time.UTC)
	k := slotKey{job: "tick", slot: slot}
	first := row{key: k, fence: 100, attempt: 1, at: slot.Add(time.Millisecond)}
	again := row{key: k, fence: 200, attempt: 1, at: slot.Add(400 * time.Millisecond)}
	for _, tc := range []struct {
		name   string
		losses []time.Time
		rows   []row
		broken bool
	}{
		{"no loss", nil, []row{first, again}, true},
		{"a loss after the claim made ahead, before the second start", []time.Time{slot.Add(-300 * time.Millisecond)},
			[]row{first, again}, false},
		{"a loss long before the slot", []time.Time{slot.Add(-time.Minute)}, []row{first, again}, true},
		{"the later claim started first", []time.Time{slot.Add(-300 * time.Millisecond)},
			[]row{{key: k, fence: 200, attempt: 1, at: first.at}, {key: k, fence: 100, attempt: 1, at: again.at}}, false},
		{"the later claim started first, no loss", nil,
			[]row{{key: k, fence: 200, attempt: 1, at: first.at}, {key: k, fence: 100, attempt: 1, at: again.at}}, true},
	} {
		got := fenceOrder(map[slotKey][]row{k: tc.rows}, tc.losses)
		if (len(got) > 0) != tc.broken {
			t.Errorf("%s: %q, want broken %v", tc.name, got, tc.broken)
		}
	}
}
