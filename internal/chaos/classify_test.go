package chaos

import (
	"slices"
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

// A slot whose run the store lost with its data is excused however long
// after the slot the loss came, if a run of it was live then: a slow job
// taken over again and again runs well past the slot's own window.
func TestClassifyExcusesALossWhileItRan(t *testing.T) {
	slot := time.Date(2026, 12, 1, 15, 3, 15, 0, time.UTC)
	k := slotKey{job: "slow", slot: slot}
	o := Options{Store: StoreRedis, Lease: 2 * time.Second, Deadline: 5 * time.Second}
	missed := []slotstore.Marker{{Job: k.job, Slot: slot, State: slotstore.StateSkipped, Reason: "missed: late", Holder: "r1"}}
	flush := Fault{Kind: FaultRedisFlush, At: slot.Add(12700 * time.Millisecond)}
	started := logLine{Msg: "run started", Job: k.job, Slot: slot.Format(time.RFC3339), Fence: 4, Time: slot.Add(12 * time.Second), replica: "r3"}
	ended := started
	ended.Msg, ended.Time = "run finished", slot.Add(12500*time.Millisecond)
	early := started
	early.Time = slot.Add(4 * time.Second)
	for _, tc := range []struct {
		name    string
		lines   []logLine
		excused bool
		faults  []Fault
	}{
		{"running at the loss", []logLine{started}, true, nil},
		{"ended before the loss", []logLine{started, ended}, false, nil},
		{"never started", nil, false, nil},
		// Killed a lease and more before the loss: its successor, not the
		// loss, should have run the slot.
		{"killed well before the loss", []logLine{early}, false,
			[]Fault{{Kind: FaultKill, Replica: "r3", At: early.Time.Add(500 * time.Millisecond)}}},
		{"killed just before the loss", []logLine{started}, true,
			[]Fault{{Kind: FaultKill, Replica: "r3", At: flush.At.Add(-time.Second)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &session{o: o, markers: map[slotKey][]slotstore.Marker{k: missed}}
			l := s.classify(k, 5*time.Second, append([]Fault{flush}, tc.faults...), tc.lines)
			if got := l.Excused != ""; got != tc.excused {
				t.Errorf("excused %v (%q), want %v", got, l.Excused, tc.excused)
			}
		})
	}
}

// A successor that started a dead holder's slot on time and was killed
// before its job recorded the start still took the slot over then: its
// logged start counts, not only the next recorded one.
func TestTakeoverCountsALoggedStart(t *testing.T) {
	slot := time.Date(2026, 12, 1, 16, 29, 35, 0, time.UTC)
	k := slotKey{job: "tick", slot: slot}
	s := &session{o: Options{Store: StorePostgres, Lease: 2 * time.Second, Deadline: 5 * time.Second}}
	taken := slot.Add(250 * time.Millisecond)
	p := &probe{key: k, fence: 1, fault: FaultEffectKill + " r2", at: taken, leaseEnd: slot.Add(2 * time.Second)}
	recorded := map[slotKey][]row{k: {{key: k, fence: 3, attempt: 3, replica: "r3", at: slot.Add(4 * time.Second)}}}
	logged := []logLine{{Msg: "run started", Job: k.job, Slot: slot.Format(time.RFC3339), Fence: 2, Attempt: 2,
		Time: slot.Add(2040 * time.Millisecond), replica: "r1"}}
	killed := []Fault{{Kind: FaultKill, Replica: "r1", At: slot.Add(2100 * time.Millisecond)}}
	got, _ := s.takeovers([]*probe{p}, recorded, killed, logged)
	if len(got) != 1 || got[0].Latency != 1790*time.Millisecond {
		t.Fatalf("takeovers %+v, want r1's logged start 1.79 s after the holder was taken out", got)
	}
	// Not killed, it would have recorded its start: one it did not record
	// never ran its job (its lease was lost as it began), and the takeover
	// is r3's.
	ended := logged[0]
	ended.Msg, ended.Time = "lease lost", ended.Time.Add(time.Millisecond)
	for _, faults := range [][]Fault{nil, {{Kind: FaultKill, Replica: "r1", At: slot.Add(3 * time.Second)}}} {
		got, _ = s.takeovers([]*probe{p}, recorded, faults, append(slices.Clone(logged), ended))
		if len(got) != 1 || got[0].Latency != 3750*time.Millisecond {
			t.Errorf("faults %v: takeovers %+v, want r3's recorded start 3.75 s after the holder was taken out", faults, got)
		}
	}
}
