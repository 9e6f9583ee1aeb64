package main

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
)

// tourConfig copies config.example.yaml, the README tour's configuration,
// into a directory of its own (its SQLite file is relative), logging JSON
// for the test to read.
func tourConfig(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "format: text", "format: json", 1)
	if doc == string(data) {
		t.Fatal("config.example.yaml has no log format: text to switch to json")
	}
	path := filepath.Join(t.TempDir(), "slotcron.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The tour's step "stop one gracefully", on the tour's own configuration:
// Ctrl-C (SIGTERM) of the replica running the demo's sleep job hands its
// slot over within shutdown_grace, not a lease later, and the replica
// exits 0.
func TestTourHandsOverOnSIGTERM(t *testing.T) {
	skipShort(t)
	config := tourConfig(t)
	r1 := startReplica(t, "r1", config)
	r1.waitFor(t, "scheduler started", 20*time.Second)
	r2 := startReplica(t, "r2", config)
	r2.waitFor(t, "scheduler started", 20*time.Second)

	holder, other, first := sleepHolder(t, r1, r2)
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var taken logLine
	poll.Until(t, 10*time.Second, other.name+" to start the released slot", func() error {
		for _, l := range other.find("run started") {
			if l.Job == "sleep" && l.Slot == first.Slot {
				taken = l
				return nil
			}
		}
		return errors.New("not yet")
	})
	after := taken.seen.Sub(stopped)
	t.Logf("%s started slot %s %v after SIGTERM to %s (shutdown_grace 3s, lease 15s)", other.name, first.Slot, after, holder.name)
	if taken.Fence <= first.Fence || taken.Attempt != 2 {
		t.Errorf("hand-over fence %d attempt %d; first fence %d", taken.Fence, taken.Attempt, first.Fence)
	}
	// A duty the stopped replica led is handed over at once, not a
	// lease later.
	if len(holder.find("leadership acquired")) > 0 {
		led := other.waitFor(t, "leadership acquired", 5*time.Second)
		if d := led.seen.Sub(stopped); d > 3*time.Second {
			t.Errorf("%s took the owner duty %v after SIGTERM to its leader, want at once", other.name, d)
		}
	}
	<-holder.done
	if err := holder.cmd.Wait(); err != nil {
		t.Errorf("%s exited with %v, want 0", holder.name, err)
	}
	other.stop(t)
}

// The tour's step "freeze the holder": a replica stopped (kill -STOP) for
// longer than the lease while it runs the demo's sleep job is taken over by
// the other replica, and when it is let go (kill -CONT), its job having
// ended during the freeze, it logs the lease it lost before saying it
// recorded nothing.
func TestTourFrozenHolderLogsItsLostLease(t *testing.T) {
	skipShort(t)
	config := tourConfig(t)
	r1 := startReplica(t, "r1", config)
	r1.waitFor(t, "scheduler started", 20*time.Second)
	r2 := startReplica(t, "r2", config)
	r2.waitFor(t, "scheduler started", 20*time.Second)

	holder, other, first := sleepHolder(t, r1, r2)
	freezeOutsideWrites(t, holder, filepath.Join(filepath.Dir(config), "slotcron.db"))
	// Frozen past the lease (15 s) and past the job's 20 s of work.
	poll.Until(t, 40*time.Second, other.name+" to take the frozen holder's slot over", func() error {
		for _, l := range other.find("run started") {
			if l.Job == "sleep" && l.Slot == first.Slot && l.Attempt == 2 {
				return nil
			}
		}
		return errors.New("not yet")
	})
	time.Sleep(time.Until(first.seen.Add(22 * time.Second))) // the freeze outlasts the job's work
	if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ended := holder.waitFor(t, "run ended after lease lost; outcome not recorded", 20*time.Second)
	var lost *logLine
	for _, l := range holder.find("lease lost") {
		if l.Job == "sleep" && l.Slot == first.Slot {
			lost = &l
		}
	}
	switch {
	case lost == nil:
		t.Errorf("%s logged no lease lost for slot %s after its freeze", holder.name, first.Slot)
	case lost.Time.After(ended.Time):
		t.Errorf("lease lost at %v, after the run's end at %v", lost.Time, ended.Time)
	case lost.Fence != first.Fence || lost.Attempt != 1:
		t.Errorf("lease lost with fence %d attempt %d, want the frozen run's %d, 1", lost.Fence, lost.Attempt, first.Fence)
	}
	holder.stop(t)
	other.stop(t)
}

// freezeOutsideWrites stops p (kill -STOP) at a moment it holds no write
// transaction on the SQLite file db: a process frozen inside one keeps the
// file's write lock, and every other replica waits for it — SQLite's locks
// have no lease. It freezes p, checks that a write can begin, and if not
// lets p go on for a moment and tries again.
func freezeOutsideWrites(t *testing.T, p *proc, db string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(2000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for try := 0; ; try++ {
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin()
		if err == nil {
			_, err = tx.Exec("CREATE TABLE IF NOT EXISTS tour_probe (x INTEGER); DROP TABLE tour_probe")
			_ = tx.Rollback()
		}
		if err == nil {
			return
		}
		if try == 5 {
			t.Fatalf("%s holds the SQLite write lock at every freeze: %v", p.name, err)
		}
		if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// sleepHolder waits for one of r1 and r2 to start the demo's sleep job
// (once a minute) and returns it, the other, and its run started line.
func sleepHolder(t *testing.T, r1, r2 *proc) (holder, other *proc, first logLine) {
	t.Helper()
	poll.Until(t, 90*time.Second, "a replica to start the sleep job", func() error {
		for _, p := range []*proc{r1, r2} {
			for _, l := range p.find("run started") {
				if l.Job == "sleep" && l.Attempt == 1 {
					holder, first = p, l
				}
			}
		}
		if holder == nil {
			return errors.New("not yet")
		}
		return nil
	})
	return holder, map[*proc]*proc{r1: r2, r2: r1}[holder], first
}
