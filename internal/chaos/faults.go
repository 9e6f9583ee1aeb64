package chaos

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kinds of fault.
const (
	FaultKill         = "kill"          // SIGKILL, preferring a holder mid-run; restart 1-3 s later
	FaultStop         = "stop"          // SIGSTOP for 0.5-3 leases, then SIGCONT
	FaultEffectKill   = "effect-kill"   // the holder kills itself after its effect committed
	FaultEffectStop   = "effect-stop"   // ... or freezes there
	FaultTxStop       = "tx-stop"       // frozen inside its CompleteTx transaction, after CompleteTx
	FaultCut          = "cut"           // the replica's store connection refused
	FaultBlackhole    = "blackhole"     // ... or silent
	FaultDelay        = "delay"         // ... or slow
	FaultClock        = "clock"         // the replica's clock off by ±1 min or more than starting_deadline
	FaultRedisRestart = "redis-restart" // Redis without persistence restarted: empty
	FaultRedisFlush   = "redis-flush"   // FLUSHALL
	FaultPGCrash      = "pg-crash"      // Postgres immediate shutdown and restart
	// etcd: a holder is taken out before its effect, never after it, and
	// the cluster's members fail beside the replicas (etcd.go).
	FaultRunKill        = "run-kill"         // the holder killed at its point before effect
	FaultRunStop        = "run-stop"         // ... or frozen there until its successor wrote the effect
	FaultEtcdLeaderKill = "etcd-leader-kill" // SIGKILL of the member leading then; restarted 1-3 s later
	FaultEtcdFreeze     = "etcd-freeze"      // SIGSTOP of one member for 10 s
)

// Fault is one fault the harness inflicted.
type Fault struct {
	Kind    string
	Replica string    // empty for a fault of the store
	At      time.Time // when it began
	Until   time.Time // when it ended; At for an instant one
	Detail  string    // the delay, the clock's offset, the etcd member
}

// storeFault reports whether f took the store away from every replica. A
// fault of one etcd member does not: a quorum of the cluster stands
// through it, and the replicas' clients fail over to the others.
func (f Fault) storeFault() bool { return f.Replica == "" && !f.etcdMember() }

// etcdMember reports whether f is a fault of one member of the etcd
// cluster.
func (f Fault) etcdMember() bool { return f.Kind == FaultEtcdLeaderKill || f.Kind == FaultEtcdFreeze }

// kill reports whether f killed its replica's process.
func (f Fault) kill() bool {
	return f.Kind == FaultKill || f.Kind == FaultEffectKill || f.Kind == FaultRunKill
}

// who names what f hit: the replica, or else its detail (the etcd member).
func (f Fault) who() string {
	if f.Replica != "" {
		return f.Replica
	}
	return f.Detail
}

func (s *session) record(f Fault) {
	if f.Until.IsZero() {
		f.Until = f.At
	}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
}

// weights are the kinds of fault a store gets, each with its weight. On
// etcd a holder is taken out only before its effect (run-kill, run-stop),
// and kill and stop take out only replicas that hold nothing: a holder
// killed or frozen after its effect committed and before its slot was
// recorded finished is re-executed, which the stale-only fence check
// lets through, and the session holds that style to no duplicate there.
// Its replicas reach the cluster's members directly, through no proxy.
func (s *session) weights() map[string]int {
	if s.o.Store == StoreEtcd {
		return map[string]int{FaultKill: 3, FaultStop: 2, FaultRunKill: 3, FaultRunStop: 2, FaultClock: 1}
	}
	w := map[string]int{FaultKill: 4, FaultStop: 2, FaultEffectKill: 2, FaultEffectStop: 1, FaultClock: 1}
	if s.o.Store != StoreSQLite {
		w[FaultCut], w[FaultBlackhole], w[FaultDelay] = 1, 1, 1
	}
	switch s.o.Store {
	case StoreRedis:
		w[FaultRedisRestart], w[FaultRedisFlush] = 2, 1
	case StorePostgres:
		w[FaultPGCrash], w[FaultTxStop] = 1, 2
	}
	return w
}

func (s *session) pick(w map[string]int) string {
	kinds := make([]string, 0, len(w))
	total := 0
	for k, n := range w {
		kinds = append(kinds, k)
		total += n
	}
	slices.Sort(kinds) // a map's order is random; the seed's must not be
	n := s.intn(total)
	for _, k := range kinds {
		if n < w[k] {
			return k
		}
		n -= w[k]
	}
	return kinds[0]
}

// draw is every random choice of one fault, made on the fault loop's
// goroutine from the session's seeded source, so a seed gives the same
// schedule of kinds, waits and durations whatever the replicas do.
type draw struct {
	kind   string
	pick   int           // which of the candidate replicas
	holder bool          // a kill prefers a holder mid-run
	hold   time.Duration // how long a lasting fault lasts
	delay  time.Duration // a slow connection's delay
	offset time.Duration // a clock fault's offset
}

func (s *session) draw(w map[string]int) draw {
	lease := s.o.Lease
	d := draw{kind: s.pick(w), pick: s.intn(1 << 20), holder: s.intn(5) > 0}
	switch d.kind {
	case FaultStop, FaultEffectStop, FaultRunStop:
		d.hold = s.between(lease/2, 3*lease)
	case FaultTxStop:
		d.hold = s.between(3*lease/2, 3*lease) // past the lease, so the frozen transaction ends for its successor
	case FaultCut, FaultBlackhole, FaultDelay:
		d.hold = s.between(lease, 5*lease/2)
		d.delay = s.between(100*time.Millisecond, lease/2)
	case FaultClock:
		offsets := []time.Duration{time.Minute + time.Second, -time.Minute - time.Second,
			s.o.Deadline + 3*time.Second, -s.o.Deadline - 3*time.Second}
		d.offset = offsets[s.intn(len(offsets))]
		d.hold = s.between(5*time.Second, 20*time.Second)
	}
	return d
}

// injectFaults inflicts faults for d, one every o.Every on average.
// Faults of the store happen here, one at a time; faults of a replica
// run on their own, at most two replicas at once, so two stay healthy.
// On etcd the cluster's members fail on their own cadence beside them.
func (s *session) injectFaults(d time.Duration) {
	var running sync.WaitGroup
	quit := make(chan struct{})
	end := time.Now().Add(d)
	if s.o.Store == StoreEtcd {
		running.Go(func() { s.etcdFaults(time.Now(), d) })
	}
	w := s.weights()
	for time.Now().Before(end) {
		time.Sleep(s.between(s.o.Every/2, s.o.Every*3/2))
		switch dr := s.draw(w); dr.kind {
		case FaultRedisRestart:
			at := time.Now()
			s.redis.Restart(s.t)
			s.record(Fault{Kind: dr.kind, At: at, Until: time.Now()})
			s.putSchedules() // the service writes its tenants' schedules again
		case FaultRedisFlush:
			at := time.Now()
			c := redis.NewClient(&redis.Options{Addr: s.redis.Addr()})
			err := c.FlushAll(context.Background()).Err()
			c.Close()
			if err != nil {
				s.oddf("FLUSHALL: %v", err)
				continue
			}
			s.record(Fault{Kind: dr.kind, At: at})
			s.putSchedules()
		case FaultPGCrash:
			at := time.Now()
			s.pg.Crash(s.t)
			s.record(Fault{Kind: dr.kind, At: at, Until: time.Now()})
		default:
			m := s.target(dr)
			if m == nil {
				continue
			}
			running.Go(func() {
				defer m.release()
				s.inflict(dr, m, quit)
			})
		}
	}
	close(quit)
	running.Wait()
}

// target picks a healthy replica for a fault and marks it busy, or returns
// nil when that would leave fewer than two healthy. A kill prefers a
// replica holding a slot mid-run; on etcd a kill or a stop takes only a
// replica that holds nothing.
func (s *session) target(dr draw) *member {
	var healthy, holders, idle []*member
	for _, m := range s.members {
		if m.healthy() {
			healthy = append(healthy, m)
			if len(m.holding()) > 0 {
				holders = append(holders, m)
			} else {
				idle = append(idle, m)
			}
		}
	}
	if len(healthy) < 3 {
		return nil
	}
	pool := healthy
	switch {
	case s.o.Store == StoreEtcd && (dr.kind == FaultKill || dr.kind == FaultStop):
		pool = idle
	case dr.kind == FaultKill && len(holders) > 0 && dr.holder:
		pool = holders
	}
	if len(pool) == 0 {
		return nil
	}
	m := pool[dr.pick%len(pool)]
	if !m.claim() {
		return nil
	}
	return m
}

// hold waits d, or less if the session ends the faults.
func hold(d time.Duration, quit <-chan struct{}) {
	select {
	case <-time.After(d):
	case <-quit:
	}
}

// inflict inflicts a fault on m and, for a lasting one, ends it.
func (s *session) inflict(dr draw, m *member, quit <-chan struct{}) {
	kind := dr.kind
	f := Fault{Kind: kind, Replica: m.name, At: time.Now()}
	switch kind {
	case FaultKill:
		if s.o.Store == StoreEtcd {
			if !s.frozenIdle(m) {
				return
			}
			f.At = time.Now()
		}
		held := m.holding()
		if !m.signal(syscall.SIGKILL) {
			return
		}
		s.record(f)
		s.probe(kind, m.name, f.At, held)
		m.wait(10 * time.Second)
		return // the monitor restarts it; start marks it no longer busy
	case FaultStop:
		held := m.holding()
		if s.o.Store == StoreEtcd {
			if !s.frozenIdle(m) {
				return
			}
		} else if !m.signal(syscall.SIGSTOP) {
			return
		}
		s.probe(kind, m.name, f.At, held)
		hold(dr.hold, quit)
		m.signal(syscall.SIGCONT)
	case FaultRunKill, FaultRunStop:
		if !s.armed(kind, m, quit) {
			return
		}
		held, ok := s.noEffectPending(m)
		if !ok {
			m.signal(syscall.SIGCONT)
			return
		}
		f.At = time.Now()
		if kind == FaultRunKill {
			if !m.signal(syscall.SIGKILL) {
				return
			}
			s.record(f)
			s.probe(kind, m.name, f.At, held)
			m.wait(10 * time.Second)
			return // the monitor restarts it; start marks it no longer busy
		}
		s.probe(kind, m.name, f.At, held)
		hold(dr.hold, quit)
		s.awaitSuccessors(m, held, f.At)
		m.signal(syscall.SIGCONT)
	case FaultEffectKill, FaultEffectStop, FaultTxStop:
		if !s.armed(kind, m, quit) {
			return
		}
		if kind == FaultEffectKill {
			m.wait(10 * time.Second)
			return // recorded and probed by the monitor when the process dies
		}
		f.At = time.Now()
		s.probe(kind, m.name, f.At, m.holding())
		hold(dr.hold, quit)
		m.signal(syscall.SIGCONT)
	case FaultCut, FaultBlackhole, FaultDelay:
		switch kind {
		case FaultCut:
			m.proxy.Cut()
		case FaultBlackhole:
			m.proxy.Blackhole()
		case FaultDelay:
			f.Detail = dr.delay.String()
			m.proxy.Delay(dr.delay)
		}
		hold(dr.hold, quit)
		m.proxy.Restore()
	case FaultClock:
		f.Detail = dr.offset.String()
		if err := s.ctl.setOffset(m.name, dr.offset); err != nil {
			s.oddf("set clock of %s: %v", m.name, err)
			return
		}
		hold(dr.hold, quit)
		if err := s.ctl.setOffset(m.name, 0); err != nil {
			s.oddf("reset clock of %s: %v", m.name, err)
		}
	}
	f.Until = time.Now()
	s.record(f)
}

// armed arms the fault point of kind in m and waits until m's job takes
// it (for a stop, until the process is stopped); it reports false when
// none did within a while, and disarms it.
func (s *session) armed(kind string, m *member, quit <-chan struct{}) bool {
	point, act := pointAfterEffect, actKill
	switch kind {
	case FaultEffectStop:
		act = actStop
	case FaultTxStop:
		point, act = pointInTx, actStop
	case FaultRunKill, FaultRunStop:
		// Frozen first, killed after by the harness, once it has seen
		// that no other run of the process has an effect pending.
		point, act = pointBeforeEffect, actStop
	}
	m.mu.Lock()
	m.armed = act
	m.mu.Unlock()
	if err := s.ctl.arm(m.name, point, act); err != nil {
		s.oddf("arm %s: %v", m.name, err)
		return false
	}
	deadline := time.After(15 * time.Second)
	for {
		if act == actKill && !m.isUp() {
			return true
		}
		if act == actStop && s.ctl.taken(m.name, point, act) {
			// The job stops itself right after taking the request.
			for wait := time.Now().Add(5 * time.Second); !m.stopped() && time.Now().Before(wait); {
				time.Sleep(5 * time.Millisecond)
			}
			m.mu.Lock()
			m.frozen, m.armed = true, ""
			m.mu.Unlock()
			if !m.stopped() {
				s.oddf("%s took a %s request and did not stop", m.name, kind)
				return false
			}
			return true
		}
		select {
		case <-deadline:
		case <-quit:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		if s.ctl.disarm(m.name, point, act) {
			m.mu.Lock()
			m.armed = ""
			m.mu.Unlock()
			return false
		}
		// Taken between the two looks.
	}
}

func (m *member) isUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up
}
