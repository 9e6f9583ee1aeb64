package chaos

import (
	"context"
	"syscall"
	"time"
)

// On etcd the session holds the stale-only fence check to no duplicate
// effect, so no fault may take a holder out between its effect and the
// record of its slot finished: its successor would run the slot again with
// a higher fence, which that check accepts. A replica is therefore taken
// out only where it has no effect pending, which the harness checks while
// the process is frozen and cannot move on: a kill or a stop takes a
// replica that holds nothing, and run-kill and run-stop take a holder at
// its point before effect, when no other run of its process has written
// an effect it has not yet recorded.

// drainQuiet is how long no line may come from a frozen process before the
// harness takes it that it has read every line the process wrote.
const drainQuiet = 100 * time.Millisecond

// drain waits until the harness has read the lines a frozen process wrote
// before it froze: until none has come for drainQuiet, for at most a
// second.
func (m *member) drain() {
	n := m.lineCount()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(drainQuiet)
		k := m.lineCount()
		if k == n {
			return
		}
		n = k
	}
}

func (m *member) lineCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lines)
}

// frozenIdle freezes m and reports whether it holds nothing, by every line
// it logged before it froze. A run in its effect's window logged its start
// at least the job's shortest work before, so a replica that claimed a
// slot an instant before the freeze has nothing pending; one that holds a
// run is resumed at once, and the fault is withdrawn.
func (s *session) frozenIdle(m *member) bool {
	if !m.signal(syscall.SIGSTOP) {
		return false
	}
	m.drain()
	if held := m.holding(); len(held) > 0 {
		m.signal(syscall.SIGCONT)
		s.logf("chaos: %s held %d runs when frozen; fault withdrawn", m.name, len(held))
		return false
	}
	return true
}

// noEffectPending reports, for m frozen at its point before effect, the
// runs it holds by its log and whether none of them has written an effect:
// another run of the process may have committed its effect and not yet
// recorded its slot finished. The caller resumes m when it has.
func (s *session) noEffectPending(m *member) ([]runRef, bool) {
	m.drain()
	held := m.holding()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range held {
		slot, err := time.Parse(time.RFC3339, r.slot)
		if err != nil {
			s.oddf("%s logged a run of %s at slot %q, not RFC 3339", m.name, r.job, r.slot)
			return held, false
		}
		var wrote bool
		err = s.effects.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM effect_once WHERE job = $1 AND slot = $2 AND fence = $3
			UNION ALL SELECT 1 FROM effect_fenced WHERE job = $1 AND slot = $2 AND fence = $3
			UNION ALL SELECT 1 FROM effect_plain WHERE job = $1 AND slot = $2 AND fence = $3)`, r.job, slot, r.fence).Scan(&wrote)
		if err != nil {
			s.logf("chaos: read the effects of %s@%s: %v; fault withdrawn", r.job, r.slot, err)
			return held, false
		}
		if wrote {
			s.logf("chaos: %s froze with %s@%s (fence %d) between its effect and its finish; fault withdrawn", m.name, r.job, r.slot, r.fence)
			return held, false
		}
	}
	return held, true
}

// awaitSuccessors keeps m, frozen before its effect since at, frozen until
// a successor has written the effect of each run it held through the
// stale-only fence check, with a higher fence: m's late write then meets
// that fence and is refused. Resumed before, its write could come first,
// and the successor's would repeat it, which no fence refuses. After a
// bound well past any takeover, it gives up and says so.
func (s *session) awaitSuccessors(m *member, held []runRef, at time.Time) {
	deadline := at.Add(s.o.Deadline + 4*s.o.Lease + 10*time.Second)
	for _, r := range held {
		slot, err := time.Parse(time.RFC3339, r.slot)
		if err != nil {
			continue // said by noEffectPending
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var written bool
			err := s.effects.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM effect_fenced WHERE job = $1 AND slot = $2 AND fence > $3)`,
				r.job, slot, r.fence).Scan(&written)
			cancel()
			if err == nil && written {
				break
			}
			if time.Now().After(deadline) {
				s.oddf("%s frozen before its effect since %s: no successor wrote the effect of %s@%s (fence %d) within %v",
					m.name, at.UTC().Format(time.RFC3339Nano), r.job, r.slot, r.fence, time.Since(at).Round(time.Millisecond))
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
