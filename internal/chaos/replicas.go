package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// Phases of a session: the monitor restarts a dead replica after a pause
// while faults are injected, at once while the replicas settle, and not
// at all once they are being stopped.
const (
	phaseFaults = iota
	phaseSettle
	phaseStop
)

// startReplicas starts every replica, a little apart, and waits until each
// has started its scheduler.
func (s *session) startReplicas() {
	for i := range s.o.Replicas {
		m := &member{name: fmt.Sprintf("r%d", i+1), config: filepath.Join(s.dir, fmt.Sprintf("r%d.yaml", i+1)),
			restarts: rand.New(rand.NewPCG(s.o.Seed, uint64(i+1)))}
		if addr := s.storeAddr(); addr != "" {
			m.proxy = testserver.StartProxy(s.t, addr)
		}
		f, err := os.Create(filepath.Join(s.dir, m.name+".log"))
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(func() { f.Close() })
		m.log = f
		s.writeConfig(m)
		s.members = append(s.members, m)
	}
	s.t.Cleanup(s.killAll)
	for _, m := range s.members {
		s.spawn(m)
		time.Sleep(s.between(0, 700*time.Millisecond))
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, m := range s.members {
		for !m.logged("scheduler started") {
			if time.Now().After(deadline) {
				s.t.Fatalf("chaos: %s did not start within a minute; its log is %s", m.name, m.log.Name())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	s.logf("chaos: %d replicas on %s started", len(s.members), s.o.Store)
}

// spawn starts a process of m.
func (s *session) spawn(m *member) {
	env := slices.Concat(s.o.Env, []string{envEffects + "=" + s.effectsDSN, envControl + "=" + s.ctl.dir})
	if s.o.Store == StorePostgres {
		env = append(env, envLedger+"="+s.memberDSN(m))
	}
	if err := m.start(s.o.Program, env, s.exited); err != nil {
		s.oddf("%v", err)
	}
}

// exited is called when a process of m ends: it records the end an armed
// fault caused, reports any end nobody caused, and restarts m as the
// phase says.
func (s *session) exited(m *member, state *os.ProcessState, held []runRef) {
	m.mu.Lock()
	expect, armed := m.expect, m.armed
	m.armed = ""
	m.mu.Unlock()
	killed := state != nil && !state.Exited() && state.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	s.mu.Lock()
	phase := s.phase
	s.mu.Unlock()
	switch {
	case expect && phase == phaseStop && state != nil && state.Exited() && state.ExitCode() != 0:
		s.oddf("%s exited with status %d on SIGTERM, want 0 (log %s)", m.name, state.ExitCode(), m.log.Name())
	case expect:
	case armed == actKill && killed && s.ctl.taken(m.name, pointAfterEffect, actKill):
		at := time.Now()
		s.record(Fault{Kind: FaultEffectKill, Replica: m.name, At: at})
		s.probe(FaultEffectKill, m.name, at, held)
	default:
		s.oddf("%s exited on its own: %v (log %s)", m.name, state, m.log.Name())
	}
	switch phase {
	case phaseFaults:
		go func() {
			time.Sleep(time.Second + time.Duration(m.restarts.Int64N(int64(2*time.Second))))
			s.mu.Lock()
			phase := s.phase
			s.mu.Unlock()
			if phase != phaseStop && !m.isUp() {
				s.spawn(m)
			}
		}()
	case phaseSettle:
		s.spawn(m)
	}
}

// killAll ends every process at the end of the test, whatever happened.
func (s *session) killAll() {
	s.mu.Lock()
	s.phase = phaseStop
	s.mu.Unlock()
	for _, m := range s.members {
		m.signal(syscall.SIGCONT)
		m.signal(syscall.SIGKILL)
	}
	for _, m := range s.members {
		m.wait(10 * time.Second)
	}
}

// stopAll stops every replica as an operator would: SIGTERM, and a clean
// exit expected within the shutdown grace and a margin.
func (s *session) stopAll() {
	s.mu.Lock()
	s.phase = phaseStop
	s.mu.Unlock()
	for _, m := range s.members {
		m.mu.Lock()
		m.expect = true
		m.mu.Unlock()
		m.signal(syscall.SIGCONT)
		if !m.signal(syscall.SIGTERM) {
			continue
		}
	}
	for _, m := range s.members {
		if !m.wait(30 * time.Second) {
			s.oddf("%s did not stop within 30s of SIGTERM", m.name)
			m.signal(syscall.SIGKILL)
			m.wait(10 * time.Second)
		}
	}
}

// logged reports whether m's log has a line with msg.
func (m *member) logged(msg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.lines {
		if l.Msg == msg {
			return true
		}
	}
	return false
}

// oddf records something the harness cannot explain.
func (s *session) oddf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.logf("chaos: %s", msg)
	s.mu.Lock()
	s.odd = append(s.odd, msg)
	s.mu.Unlock()
}
