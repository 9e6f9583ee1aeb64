package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/slotstore"
)

// configAt writes, in dir, a configuration file named name on the SQLite
// file of dir, with revision (0 for none) and jobs.
func configAt(t *testing.T, dir, name string, revision int, jobs string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	rev := ""
	if revision > 0 {
		rev = fmt.Sprintf("revision: %d\n", revision)
	}
	doc := fmt.Sprintf("replica: ${SLOTCRON_REPLICA}\n%sstore: {kind: sqlite, sqlite: {path: %q}}\nlog: {format: json, level: debug}\nshutdown_grace: 30s\njobs:\n%s",
		rev, filepath.Join(dir, "slotcron.db"), jobs)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ranSlots returns, for job, the slots the replicas logged a finished run
// of, each with how many runs.
func ranSlots(procs []*proc, job string) map[int64]int {
	out := map[int64]int{}
	for _, p := range procs {
		for _, l := range p.find("run finished") {
			if l.Job != job {
				continue
			}
			s, err := time.Parse(time.RFC3339, l.Slot)
			if err == nil {
				out[s.Unix()]++
			}
		}
	}
	return out
}

// A rolling deploy of three replica processes from a job every 2 s to
// every 3 s, each replica replaced in turn: every slot of the window runs
// once, under exactly one spec — the old one's slots until the first new
// replica enrolled (and those already claimed ahead then), the new one's
// from then on — and the old replicas say they stand aside.
func TestRollingDeployRunsEachSlotUnderOneSpec(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	oldConf := configAt(t, dir, "old.yaml", 1, "  tick: {run: hello, schedule: \"*/2 * * * * *\", lease: 3s, starting_deadline: 2s}\n")
	newConf := configAt(t, dir, "new.yaml", 2, "  tick: {run: hello, schedule: \"*/3 * * * * *\", lease: 3s, starting_deadline: 2s}\n")
	var procs []*proc
	olds := make([]*proc, 3)
	for i := range olds {
		olds[i] = startReplica(t, fmt.Sprintf("r%d", i), oldConf)
		procs = append(procs, olds[i])
	}
	for _, p := range olds {
		p.waitFor(t, "scheduler started", 10*time.Second)
	}
	// The store's record of the job began as the first replica enrolled
	// it, and covers slots from a second later (slotstore.ClaimLead).
	from := time.Now().Truncate(time.Second).Add(2 * time.Second)
	time.Sleep(5 * time.Second)
	var switched time.Time
	for i, old := range olds {
		old.stop(t)
		fresh := startReplica(t, fmt.Sprintf("r%d", i), newConf)
		procs = append(procs, fresh)
		fresh.waitFor(t, "scheduler started", 10*time.Second)
		if i == 0 {
			switched = time.Now()
		}
		time.Sleep(4 * time.Second)
	}
	to := time.Now().Truncate(time.Second).Add(-3 * time.Second)
	for _, p := range procs[3:] {
		p.stop(t)
	}

	ran := ranSlots(procs, "tick")
	for s := from; !s.After(to); s = s.Add(time.Second) {
		n := ran[s.Unix()]
		switch {
		case n > 1:
			t.Errorf("slot %s ran %d times", s.Format(time.RFC3339), n)
		case s.Before(switched.Add(-2*time.Second)) && s.Unix()%2 == 0 && n != 1:
			t.Errorf("slot %s of the old schedule, before the switch, ran %d times", s.Format(time.RFC3339), n)
		case s.After(switched.Add(time.Second)) && s.Unix()%3 == 0 && n != 1:
			t.Errorf("slot %s of the new schedule ran %d times", s.Format(time.RFC3339), n)
		case s.After(switched.Add(slotstore.ClaimLead)) && s.Unix()%3 != 0 && n != 0:
			// A slot claimed ahead under the old spec, up to ClaimLead
			// before the switch, runs as claimed (README, "Slots are
			// claimed ahead").
			t.Errorf("slot %s of the old schedule ran after the new spec took force", s.Format(time.RFC3339))
		}
	}
	warned := 0
	for _, p := range olds[1:] {
		warned += len(p.find("job's spec is not the spec in force; not claiming its slots"))
	}
	if warned == 0 {
		t.Error("no old replica said it stood aside for the new spec")
	}
}

// SIGHUP with a file that does not validate changes nothing and says why;
// with a good one, a job is added, one removed and one rescheduled at
// once, and the removed job's running slot is not lost: it finishes.
func TestReloadOnHangup(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	long := fmt.Sprintf("  long: {run: sleep, schedule: %q, lease: 2s, params: {duration: 8s}}\n", soon(3*time.Second))
	conf := configAt(t, dir, "slotcron.yaml", 0, "  moved: {run: hello, schedule: \"*/2 * * * * *\"}\n"+
		"  gone: {run: hello, schedule: \"*/2 * * * * *\"}\n"+long)
	p := startReplica(t, "r0", conf)
	started := p.waitFor(t, "run started", 15*time.Second)
	for started.Job != "long" {
		time.Sleep(100 * time.Millisecond)
		for _, l := range p.find("run started") {
			if l.Job == "long" {
				started = l
			}
		}
	}

	// A broken file: refused, logged with its line and key, nothing changed.
	configAt(t, dir, "slotcron.yaml", 0, "  moved: {run: hello, schedule: \"61 * * * *\"}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "reload refused: bad configuration", 10*time.Second)
	if raw := strings.Join(p.lines(), "\n"); !strings.Contains(raw, `"key":"jobs.moved.schedule"`) {
		t.Errorf("the refusal does not name the key:\n%s", raw)
	}

	// A good one: moved every 5 s, gone removed, added every 3 s, long
	// (still running) kept as it is.
	configAt(t, dir, "slotcron.yaml", 0, "  moved: {run: hello, schedule: \"*/5 * * * * *\"}\n"+
		"  added: {run: hello, schedule: \"*/3 * * * * *\"}\n"+long)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reloaded := p.waitFor(t, "configuration reloaded", 10*time.Second)
	time.Sleep(11 * time.Second)
	p.stop(t)

	after := reloaded.seen.Add(time.Second).Unix()
	for job, want := range map[string]int64{"moved": 5, "added": 3} {
		n := 0
		for s := range ranSlots([]*proc{p}, job) {
			if s > after {
				n++
				if s%want != 0 {
					t.Errorf("%s ran slot %s after the reload, not of its new schedule", job, time.Unix(s, 0).UTC().Format(time.RFC3339))
				}
			}
		}
		if n < 2 {
			t.Errorf("%s ran %d slots in the 10 s after the reload", job, n)
		}
	}
	for s := range ranSlots([]*proc{p}, "gone") {
		if s > after {
			t.Errorf("the removed job ran slot %s after the reload", time.Unix(s, 0).UTC().Format(time.RFC3339))
		}
	}
	// The slow job's slot, running through both reloads, finished.
	ok := false
	for _, l := range p.find("run finished") {
		ok = ok || l.Job == "long" && l.Outcome == "succeeded" && l.Slot == started.Slot
	}
	if !ok {
		t.Errorf("the slot of long running at the reload did not finish succeeded")
	}
	if n := len(p.find("reload refused: bad configuration")); n != 1 {
		t.Errorf("%d refusals logged, want 1", n)
	}
}

// checkSlots fails the test for each slot of job in [from, to] that ran
// more than once, or did not run exactly when every says it should.
func checkSlots(t *testing.T, procs []*proc, job, phase string, from, to time.Time, every int64) {
	t.Helper()
	ran := ranSlots(procs, job)
	for s := from.Unix(); s <= to.Unix(); s++ {
		if want := map[bool]int{true: 1, false: 0}[s%every == 0]; ran[s] != want {
			t.Errorf("%s: slot %s ran %d times, want %d", phase, time.Unix(s, 0).UTC().Format(time.RFC3339), ran[s], want)
		}
	}
}

// A rollout without revisions from every 2 s to every 3 s: an old replica
// crash-looping back (killed, restarted on the old file, twice) does not
// switch the job back while a new replica lives, and claims none of its
// slots; a rollback (the new replica gone, the old file everywhere) makes
// the old spec take force again.
func TestRolloutCrashLoopThenRollback(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	oldConf := configAt(t, dir, "old.yaml", 0, "  tick: {run: hello, schedule: \"*/2 * * * * *\", lease: 3s, starting_deadline: 2s}\n")
	newConf := configAt(t, dir, "new.yaml", 0, "  tick: {run: hello, schedule: \"*/3 * * * * *\", lease: 3s, starting_deadline: 2s}\n")
	a := startReplica(t, "a", oldConf)
	b := startReplica(t, "b", oldConf)
	a.waitFor(t, "scheduler started", 10*time.Second)
	b.waitFor(t, "scheduler started", 10*time.Second)
	procs := []*proc{a, b}

	a.stop(t)
	fresh := startReplica(t, "a", newConf)
	procs = append(procs, fresh)
	fresh.waitFor(t, "scheduler started", 10*time.Second)
	from := time.Now().Truncate(time.Second).Add(2 * time.Second)
	for range 2 { // b crash-loops on the old file
		if err := b.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-b.done
		_ = b.cmd.Wait()
		b = startReplica(t, "b", oldConf)
		procs = append(procs, b)
		b.waitFor(t, "scheduler started", 10*time.Second)
		time.Sleep(3 * time.Second)
	}
	b.waitFor(t, "job's spec is not the spec in force; not claiming its slots", 10*time.Second)
	to := time.Now().Truncate(time.Second).Add(-2 * time.Second)
	checkSlots(t, procs, "tick", "crash loop", from, to, 3)

	// The rollback: the new replica replaced by an old one.
	fresh.stop(t)
	back := startReplica(t, "a", oldConf)
	procs = append(procs, back)
	back.waitFor(t, "scheduler started", 10*time.Second)
	rolled := time.Now().Truncate(time.Second).Add(3 * time.Second)
	var ran map[int64]int
	poll.Until(t, 20*time.Second, "an old slot to run after the rollback", func() error {
		ran = ranSlots(procs, "tick")
		for s := range ran {
			if s >= rolled.Unix() && s%2 == 0 && s%3 != 0 {
				return nil
			}
		}
		return errors.New("none yet")
	})
	time.Sleep(6 * time.Second)
	b.stop(t)
	back.stop(t)
	// From the first old slot after the rollback on, the old schedule only.
	first := time.Time{}
	for s := range ran {
		if s >= rolled.Unix() && s%2 == 0 && s%3 != 0 && (first.IsZero() || s < first.Unix()) {
			first = time.Unix(s, 0)
		}
	}
	checkSlots(t, procs, "tick", "rollback", first, time.Now().Truncate(time.Second).Add(-4*time.Second), 2)
}
