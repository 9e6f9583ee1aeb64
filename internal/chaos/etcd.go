package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// The cadence of etcd's faults: the member leading is killed every
// etcdKillEvery and restarted 1-3 s later; one member is frozen for
// etcdFreezeFor midway between two kills, once every etcdFreezeEvery kills.
const (
	etcdKillEvery   = 20 * time.Second
	etcdFreezeFor   = 10 * time.Second
	etcdFreezeEvery = 3 // kills: a freeze every minute
)

// etcdStep is one fault of the cluster's plan, at an offset from the start
// of the faults.
type etcdStep struct {
	kind string // FaultEtcdLeaderKill or FaultEtcdFreeze
	at   time.Duration
}

// etcdPlan is the cluster's faults for a session whose faults last d: a
// leader kill every etcdKillEvery, and after the first kill and every
// etcdFreezeEvery-th one, a freeze centred between it and the next kill,
// when it ends before d. The freeze starts 5 s after its kill, by when
// the killed member is back (1-3 s and a health check), and ends 5 s
// before the next; etcdFaults waits for each step's end anyway.
func etcdPlan(d time.Duration) []etcdStep {
	var plan []etcdStep
	for i := 1; time.Duration(i)*etcdKillEvery < d; i++ {
		kill := time.Duration(i) * etcdKillEvery
		plan = append(plan, etcdStep{FaultEtcdLeaderKill, kill})
		freeze := kill + (etcdKillEvery-etcdFreezeFor)/2
		if (i-1)%etcdFreezeEvery == 0 && freeze+etcdFreezeFor <= d {
			plan = append(plan, etcdStep{FaultEtcdFreeze, freeze})
		}
	}
	return plan
}

// etcdFaults inflicts the plan's faults on the cluster, one after the
// other on this goroutine, from start: a step comes at its time or when
// the one before has ended, whichever is later, so at most one member is
// down or frozen at any moment and a quorum always stands. Its random
// choices come from a source of their own, drawn from the seed, so the
// replica faults' schedule does not depend on how the two interleave.
func (s *session) etcdFaults(start time.Time, d time.Duration) {
	rng := rand.New(rand.NewPCG(s.o.Seed, 0xe7cd))
	for _, step := range etcdPlan(d) {
		time.Sleep(time.Until(start.Add(step.at)))
		switch step.kind {
		case FaultEtcdLeaderKill:
			m := s.etcdLeader()
			if m == nil {
				s.oddf("no etcd member knew a leader for 10s")
				continue
			}
			at := time.Now()
			m.Kill()
			time.Sleep(time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
			if err := m.Restart(); err != nil {
				s.oddf("restart etcd member %s: %v", m.Name(), err)
			}
			s.record(Fault{Kind: step.kind, At: at, Until: time.Now(), Detail: m.Name()})
			s.logf("chaos: killed etcd leader %s at %s; back after %v", m.Name(), at.Format(time.TimeOnly), time.Since(at).Round(time.Millisecond))
		case FaultEtcdFreeze:
			members := s.etcd.Members()
			m := members[rng.IntN(len(members))]
			at := time.Now()
			if err := m.Freeze(); err != nil {
				s.oddf("freeze etcd member %s: %v", m.Name(), err)
				continue
			}
			time.Sleep(etcdFreezeFor)
			if err := m.Thaw(); err != nil {
				s.oddf("thaw etcd member %s: %v", m.Name(), err)
			}
			s.record(Fault{Kind: step.kind, At: at, Until: time.Now(), Detail: m.Name()})
			s.logf("chaos: froze etcd member %s at %s for %v", m.Name(), at.Format(time.TimeOnly), etcdFreezeFor)
		}
	}
}

// etcdLeader is the member leading the cluster now, as its members say,
// asked until one knows for up to 10 s (an election may be under way).
func (s *session) etcdLeader() *testserver.EtcdMember {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m := s.etcd.Leader(); m != nil {
			return m
		}
	}
	return nil
}
