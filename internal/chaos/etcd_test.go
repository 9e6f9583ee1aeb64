package chaos

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// The cluster's plan: a leader kill every 20 s, a freeze once a minute
// midway between two kills, never overlapping a kill or its restart, and
// nothing past the end of the faults.
func TestEtcdPlan(t *testing.T) {
	for _, tc := range []struct {
		d              time.Duration
		kills, freezes []time.Duration
	}{
		{15 * time.Second, nil, nil},
		{30 * time.Second, secs(20), nil},
		{time.Minute, secs(20, 40), secs(25)},
		{3 * time.Minute, secs(20, 40, 60, 80, 100, 120, 140, 160), secs(25, 85, 145)},
	} {
		var kills, freezes []time.Duration
		plan := etcdPlan(tc.d)
		for i, st := range plan {
			switch st.kind {
			case FaultEtcdLeaderKill:
				kills = append(kills, st.at)
			case FaultEtcdFreeze:
				freezes = append(freezes, st.at)
				// 5 s after its kill (1-3 s of restart and a health
				// check), ended 5 s before the next.
				if i == 0 || plan[i-1].kind != FaultEtcdLeaderKill || st.at-plan[i-1].at < 5*time.Second {
					t.Errorf("%v: freeze at %v does not follow a kill by 5 s: %v", tc.d, st.at, plan)
				}
				if i+1 < len(plan) && plan[i+1].at < st.at+etcdFreezeFor+5*time.Second {
					t.Errorf("%v: freeze at %v ends within 5 s of the next fault: %v", tc.d, st.at, plan)
				}
				if st.at+etcdFreezeFor > tc.d {
					t.Errorf("%v: freeze at %v outlasts the faults", tc.d, st.at)
				}
			default:
				t.Errorf("%v: step of kind %q", tc.d, st.kind)
			}
		}
		if !equalDurations(kills, tc.kills) || !equalDurations(freezes, tc.freezes) {
			t.Errorf("%v: kills %v freezes %v, want %v and %v", tc.d, kills, freezes, tc.kills, tc.freezes)
		}
	}
}

func secs(ns ...int) []time.Duration {
	var out []time.Duration
	for _, n := range ns {
		out = append(out, time.Duration(n)*time.Second)
	}
	return out
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// etcd gets no fault that takes a holder out after its effect, and no
// connection fault (its replicas use no proxy); the other stores keep
// theirs.
func TestWeightsPerStore(t *testing.T) {
	want := map[string]map[string]int{
		StoreSQLite: {FaultKill: 4, FaultStop: 2, FaultEffectKill: 2, FaultEffectStop: 1, FaultClock: 1},
		StoreRedis: {FaultKill: 4, FaultStop: 2, FaultEffectKill: 2, FaultEffectStop: 1, FaultClock: 1,
			FaultCut: 1, FaultBlackhole: 1, FaultDelay: 1, FaultRedisRestart: 2, FaultRedisFlush: 1},
		StorePostgres: {FaultKill: 4, FaultStop: 2, FaultEffectKill: 2, FaultEffectStop: 1, FaultClock: 1,
			FaultCut: 1, FaultBlackhole: 1, FaultDelay: 1, FaultPGCrash: 1, FaultTxStop: 2},
		StoreEtcd: {FaultKill: 3, FaultStop: 2, FaultRunKill: 3, FaultRunStop: 2, FaultClock: 1},
	}
	for store, w := range want {
		s := &session{o: Options{Store: store}}
		if got := s.weights(); !maps.Equal(got, w) {
			t.Errorf("%s: weights %v, want %v", store, got, w)
		}
	}
}

// On etcd a kill or a stop takes only a replica that holds nothing;
// elsewhere a kill still prefers a holder.
func TestTargetOnEtcdSparesHolders(t *testing.T) {
	mk := func(holding ...bool) []*member {
		var ms []*member
		for i, h := range holding {
			m := &member{name: "r" + string(rune('1'+i)), up: true, running: map[runRef]time.Time{}}
			if h {
				m.running[runRef{"tick", "2026-12-01T00:00:00Z", 7}] = time.Now()
			}
			ms = append(ms, m)
		}
		return ms
	}
	for pick := range 6 {
		for _, kind := range []string{FaultKill, FaultStop} {
			s := &session{o: Options{Store: StoreEtcd}, members: mk(true, false, true)}
			m := s.target(draw{kind: kind, pick: pick, holder: true})
			if m == nil || m.name != "r2" {
				t.Fatalf("etcd %s, pick %d: target %v, want r2, the one holding nothing", kind, pick, m)
			}
		}
		s := &session{o: Options{Store: StoreEtcd}, members: mk(true, true, true)}
		if m := s.target(draw{kind: FaultKill, pick: pick}); m != nil {
			t.Fatalf("etcd kill with every replica holding: target %s, want none", m.name)
		}
		if m := s.target(draw{kind: FaultRunKill, pick: pick}); m == nil {
			t.Fatal("etcd run-kill found no target among healthy replicas")
		}
		s = &session{o: Options{Store: StoreRedis}, members: mk(false, true, false)}
		if m := s.target(draw{kind: FaultKill, pick: pick, holder: true}); m == nil || m.name != "r2" {
			t.Fatalf("redis kill preferring a holder, pick %d: target %v, want r2", pick, m)
		}
	}
}

// A fault of one etcd member leaves a quorum standing: it excuses no lost
// slot, no failed run and no killed holder nobody took over.
func TestClassifyEtcdMemberFaultsExcuseNothing(t *testing.T) {
	slot := time.Date(2026, 12, 10, 9, 0, 20, 0, time.UTC)
	k := slotKey{job: "tick", slot: slot}
	o := Options{Store: StoreEtcd, Lease: 2 * time.Second, Deadline: 5 * time.Second}
	kill := Fault{Kind: FaultEtcdLeaderKill, At: slot.Add(-200 * time.Millisecond), Until: slot.Add(2 * time.Second), Detail: "m1"}
	freeze := Fault{Kind: FaultEtcdFreeze, At: slot.Add(-3 * time.Second), Until: slot.Add(7 * time.Second), Detail: "m2"}
	if kill.storeFault() || freeze.storeFault() {
		t.Fatal("a fault of one etcd member counts as the store's")
	}
	if !(Fault{Kind: FaultPGCrash}).storeFault() || !(Fault{Kind: FaultRedisRestart}).storeFault() {
		t.Fatal("a crash of the store's only server no longer counts as the store's")
	}
	for _, markers := range [][]slotstore.Marker{
		nil,
		{{Job: k.job, Slot: slot, State: slotstore.StateDone, Outcome: slotstore.Failed, Holder: "r1"}},
		{{Job: k.job, Slot: slot, State: slotstore.StateSkipped, Reason: "missed: late"}},
	} {
		s := &session{o: o, markers: map[slotKey][]slotstore.Marker{k: markers}}
		l := s.classify(k, time.Second, []Fault{kill, freeze}, nil)
		if l.Excused != "" {
			t.Errorf("markers %v: excused %q by a fault of one member", markers, l.Excused)
		}
		if !strings.HasPrefix(l.Fault, FaultEtcdLeaderKill+" m1 ") {
			t.Errorf("nearest fault %q, want the leader kill of m1", l.Fault)
		}
	}
	s := &session{o: o}
	p := &probe{key: k, fence: 3, fault: FaultRunKill + " r2", at: slot.Add(300 * time.Millisecond), leaseEnd: slot.Add(2 * time.Second)}
	_, unmeasured := s.takeovers([]*probe{p}, nil, []Fault{kill, freeze}, nil)
	if len(unmeasured) != 1 {
		t.Errorf("a run-killed holder nobody took over through a leader kill: unmeasured %q, want it listed", unmeasured)
	}
}

// On etcd a duplicate through the stale-only fence check fails the
// session; elsewhere it is what that style is known not to cover.
func TestReportFailsFencedDuplicatesOnEtcd(t *testing.T) {
	for store, fail := range map[string]bool{StoreEtcd: true, StoreRedis: false, StorePostgres: false, StoreSQLite: false} {
		r := &Report{Store: store, Lease: 2 * time.Second, Faults: map[string]int{FaultRunStop: 1},
			Duplicates: map[string]int{"once": 0, "fenced": 1, "unfenced": 3}}
		fs := r.Failures()
		if fail && (len(fs) != 1 || !strings.Contains(fs[0], "duplicate fenced")) {
			t.Errorf("%s: failures %q, want one for the fenced duplicate", store, fs)
		}
		if !fail && len(fs) > 0 {
			t.Errorf("%s: failures %q, want none", store, fs)
		}
		if out := r.String(); !strings.Contains(out, "fails the session in: once") || strings.Contains(out, "fenced)") != fail {
			t.Errorf("%s: the report does not say which styles it judges:\n%s", store, out)
		}
	}
}

// The report lists each fault of an etcd member with its member and span.
func TestReportShowsEtcdFaults(t *testing.T) {
	at := time.Date(2026, 12, 10, 9, 0, 20, 0, time.UTC)
	r := &Report{Store: StoreEtcd, Faults: map[string]int{FaultEtcdLeaderKill: 1},
		MemberFaults: []Fault{{Kind: FaultEtcdLeaderKill, At: at, Until: at.Add(2345 * time.Millisecond), Detail: "m1"}}}
	if out := r.String(); !strings.Contains(out, "etcd-leader-kill m1 at 09:00:20.000, for 2.345s") {
		t.Errorf("report:\n%s\nwant the leader kill of m1 listed", out)
	}
}
