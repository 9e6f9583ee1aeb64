package chaos

import (
	"time"
)

// settle ends the faults' aftermath: every replica is back (the monitor
// restarts the dead at once now), the last slots get time to run or be
// taken over, and then every replica is stopped with SIGTERM.
func (s *session) settle() {
	s.mu.Lock()
	s.phase = phaseSettle
	s.stopped = time.Now()
	s.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range s.members {
		for !m.isUp() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !m.isUp() {
			s.oddf("%s is not back 30s after the faults ended", m.name)
		}
	}
	// A slot due when the faults ended may wait a lease for its takeover,
	// and retries; the slow jobs work for 3 s.
	time.Sleep(s.o.Deadline + 3*s.o.Lease + 3*time.Second)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		busy := false
		for _, m := range s.members {
			busy = busy || len(m.holding()) > 0
		}
		if !busy {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stopAll()
	s.logf("chaos: replicas stopped")
}
