package chaos

import (
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// classify excuses a slot with no effect only for what the store or the
// faults explain: a run that failed while the store was faulted is a run;
// a slot seen done and succeeded, or failed far from any fault, is lost.
func TestClassifyExcuses(t *testing.T) {
	slot := time.Date(2026, 12, 1, 13, 50, 34, 0, time.UTC)
	k := slotKey{job: "ledger", slot: slot}
	o := Options{Store: StorePostgres, Lease: 2 * time.Second, Deadline: 5 * time.Second}
	done := func(outcome slotstore.Outcome) []slotstore.Marker {
		return []slotstore.Marker{{Job: k.job, Slot: slot, State: slotstore.StateDone, Outcome: outcome, Holder: "r4"}}
	}
	crash := Fault{Kind: FaultPGCrash, At: slot.Add(100 * time.Millisecond), Until: slot.Add(2 * time.Second)}
	for _, tc := range []struct {
		name    string
		markers []slotstore.Marker
		faults  []Fault
		excused bool
	}{
		{"failed in a store crash", done(slotstore.Failed), []Fault{crash}, true},
		{"failed with the holder's connection cut", done(slotstore.Failed),
			[]Fault{{Kind: FaultCut, Replica: "r4", At: slot, Until: slot.Add(time.Second)}}, true},
		{"failed with another replica's connection cut", done(slotstore.Failed),
			[]Fault{{Kind: FaultCut, Replica: "r2", At: slot, Until: slot.Add(time.Second)}}, false},
		{"failed with no fault near", done(slotstore.Failed),
			[]Fault{{Kind: FaultPGCrash, At: slot.Add(time.Hour), Until: slot.Add(time.Hour)}}, false},
		{"succeeded in a store crash", done(slotstore.Succeeded), []Fault{crash}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{o: o, markers: map[slotKey][]slotstore.Marker{k: tc.markers}}
			l := s.classify(k, time.Second, tc.faults, nil)
			if got := l.Excused != ""; got != tc.excused {
				t.Errorf("excused %v (%q), want %v", got, l.Excused, tc.excused)
			}
		})
	}
}
