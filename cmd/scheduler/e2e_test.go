package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/cmd/scheduler/demo"
	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

// The test binary doubles as the scheduler binary: with this variable set,
// TestMain runs main instead of the tests, so the multi-process tests start
// real replicas without a separate build.
const childEnv = "SLOTCRON_E2E_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		reg := jobs.NewRegistry()
		demo.Register(reg)
		reg.Register("effects", effects) // the fault tests' job
		scheduler.Main(reg)
		return
	}
	os.Exit(m.Run())
}

// logLine is one JSON log line of a replica.
type logLine struct {
	Time    time.Time `json:"time"`
	Msg     string    `json:"msg"`
	Job     string    `json:"job"`
	Slot    string    `json:"slot"`
	Fence   int64     `json:"fence"`
	Attempt int       `json:"attempt"`
	Replica string    `json:"replica"`
	Outcome string    `json:"outcome"`
	seen    time.Time // when the test read it
}

// proc is one replica process whose JSON log the test reads as it comes.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []logLine
	raw  []string
	done chan struct{}
}

func startReplica(t *testing.T, name, config string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run", "--config", config)
	cmd.Dir = filepath.Dir(config) // where a relative store path is
	cmd.Env = append(os.Environ(), childEnv+"=1", "SLOTCRON_REPLICA="+name)
	return startProc(t, name, cmd)
}

// startProc starts cmd, a replica process named name whose JSON log the
// test reads, and kills it when the test ends.
func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go p.read(stderr)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
		_ = cmd.Wait()
		if t.Failed() {
			for _, l := range p.lines() {
				t.Logf("%s: %s", name, l)
			}
		}
	})
	return p
}

func (p *proc) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l logLine
		_ = json.Unmarshal(sc.Bytes(), &l)
		l.seen = time.Now()
		p.mu.Lock()
		p.raw = append(p.raw, sc.Text())
		p.logs = append(p.logs, l)
		p.mu.Unlock()
	}
}

func (p *proc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.raw...)
}

func (p *proc) find(msg string) []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []logLine
	for _, l := range p.logs {
		if l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// waitFor polls the log until a line with msg appears or the deadline passes.
func (p *proc) waitFor(t *testing.T, msg string, within time.Duration) logLine {
	t.Helper()
	var found []logLine
	poll.Until(t, within, fmt.Sprintf("%s to log %q", p.name, msg), func() error {
		if found = p.find(msg); len(found) == 0 {
			return errors.New("not logged")
		}
		return nil
	})
	return found[0]
}

// stop sends SIGTERM and expects a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("%s exited with %v, want 0", p.name, err)
	}
}

// writeConfig writes a config with the given jobs on store (a YAML flow
// mapping; empty for a SQLite file in a fresh directory).
func writeConfig(t *testing.T, store, jobs string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "slotcron.yaml")
	if store == "" {
		store = fmt.Sprintf("{kind: sqlite, sqlite: {path: %q}}", filepath.Join(dir, "slotcron.db"))
	}
	doc := fmt.Sprintf("replica: ${SLOTCRON_REPLICA}\nstore: %s\nlog: {format: json, level: debug}\nshutdown_grace: 2s\njobs:\n%s",
		store, jobs)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	t.Parallel()
}

// Three replicas started at different moments on one SQLite file run every
// slot of a per-second job exactly once between them; fences grow with the
// slots.
func TestThreeReplicasShareOneFile(t *testing.T) {
	skipShort(t)
	threeReplicas(t, "")
}

// The same on a private Redis server.
func TestThreeReplicasOnRedis(t *testing.T) {
	skipShort(t)
	r := testserver.StartRedis(t)
	threeReplicas(t, fmt.Sprintf("{kind: redis, redis: {addr: %q}}", r.Addr()))
}

// The same on a private Postgres server.
func TestThreeReplicasOnPostgres(t *testing.T) {
	skipShort(t)
	pg := testserver.StartPostgres(t)
	threeReplicas(t, fmt.Sprintf("{kind: postgres, postgres: {dsn: %q}}", pg.DSN()))
}

func threeReplicas(t *testing.T, store string) {
	config := writeConfig(t, store, "  tick: {run: hello, schedule: \"*/1 * * * * *\", lease: 3s}\n")
	var procs []*proc
	for i, delay := range []time.Duration{0, 1300 * time.Millisecond, 1400 * time.Millisecond} {
		time.Sleep(delay)
		procs = append(procs, startReplica(t, fmt.Sprintf("r%d", i), config))
	}
	procs[2].waitFor(t, "scheduler started", 10*time.Second)
	from := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(from.Add(21 * time.Second)))
	for _, p := range procs {
		p.stop(t)
	}

	type run struct {
		replica string
		fence   int64
	}
	bySlot := map[string][]run{}
	perReplica := map[string]int{}
	for _, p := range procs {
		for _, l := range p.find("run finished") {
			bySlot[l.Slot] = append(bySlot[l.Slot], run{l.Replica, l.Fence})
			perReplica[l.Replica]++
			if l.Outcome != "succeeded" || l.Attempt != 1 {
				t.Errorf("%s: slot %s outcome %s attempt %d", p.name, l.Slot, l.Outcome, l.Attempt)
			}
		}
	}
	for s := from; s.Before(from.Add(20 * time.Second)); s = s.Add(time.Second) {
		if runs := bySlot[s.UTC().Format(time.RFC3339)]; len(runs) != 1 {
			t.Errorf("slot %s ran %d times: %v", s.UTC().Format(time.RFC3339), len(runs), runs)
		}
	}
	slots := make([]string, 0, len(bySlot))
	for s, runs := range bySlot {
		if len(runs) > 1 {
			t.Errorf("slot %s ran %d times", s, len(runs))
		}
		slots = append(slots, s)
	}
	sort.Strings(slots)
	for i := 1; i < len(slots); i++ {
		if a, b := bySlot[slots[i-1]][0].fence, bySlot[slots[i]][0].fence; b <= a {
			t.Errorf("fence %d of %s is not above %d of %s", b, slots[i], a, slots[i-1])
		}
	}
	t.Logf("%d slots, runs per replica %v", len(slots), perReplica)
	if len(perReplica) < 2 {
		t.Errorf("only %v won slots", perReplica)
	}
}

// holderJob is a job that sleeps for d, far longer than its 2 s lease; its
// one slot of the day is due three to four seconds from now: after the
// store's record of the job covers it, a second after a replica's start-up
// enrolled it, however long a loaded machine takes to start one.
func holderJob(d string) string {
	return fmt.Sprintf("  long: {run: sleep, schedule: %q, lease: 2s, params: {duration: %s}}\n", soon(4*time.Second), d)
}

// soon is a daily schedule whose slot is the second d from now, in UTC: a
// slot after the store's record of the job begins (a slot from before
// would be skipped, since the store cannot know whether it ran).
func soon(d time.Duration) string {
	at := time.Now().Add(d).UTC()
	return fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour())
}

// kill -9 of the holder: the other replica takes the slot over within the
// lease plus one renewal interval, with a higher fence.
func TestKilledHolderIsTakenOver(t *testing.T) {
	skipShort(t)
	config := writeConfig(t, "", holderJob("30s"))
	a := startReplica(t, "a", config)
	first := a.waitFor(t, "run started", 10*time.Second)
	b := startReplica(t, "b", config)
	b.waitFor(t, "slot lost", 10*time.Second)

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	take := b.waitFor(t, "takeover", 10*time.Second)
	after := take.seen.Sub(killed)
	t.Logf("takeover %v after kill -9 (lease 2s, renewal every 667ms)", after)
	if limit := 2*time.Second + 2*time.Second/3 + 300*time.Millisecond; after > limit {
		t.Errorf("takeover took %v, want within lease + renewal interval (%v)", after, limit)
	}
	if take.Fence <= first.Fence || take.Attempt != 2 || take.Slot != first.Slot {
		t.Errorf("takeover fence %d attempt %d slot %s; first claim fence %d slot %s", take.Fence, take.Attempt, take.Slot, first.Fence, first.Slot)
	}
	b.stop(t)
}

// SIGSTOP of the holder for longer than its lease: the other replica takes
// over, and the paused holder, once resumed, has its job context cancelled
// and never records the slot's outcome.
func TestPausedHolderStopsBeforeFinishing(t *testing.T) {
	skipShort(t)
	config := writeConfig(t, "", holderJob("6s"))
	a := startReplica(t, "a", config)
	first := a.waitFor(t, "run started", 10*time.Second)
	b := startReplica(t, "b", config)
	b.waitFor(t, "slot lost", 10*time.Second)

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	take := b.waitFor(t, "takeover", 10*time.Second)
	time.Sleep(time.Second)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	lost := a.waitFor(t, "lease lost", 5*time.Second)
	a.waitFor(t, "run ended after lease lost; outcome not recorded", 5*time.Second)
	done := b.waitFor(t, "run finished", 15*time.Second)
	a.stop(t)
	b.stop(t)

	if lost.Fence != first.Fence {
		t.Errorf("lease lost for fence %d, want %d", lost.Fence, first.Fence)
	}
	if fin := a.find("run finished"); len(fin) != 0 {
		t.Errorf("the paused holder recorded an outcome: %+v", fin)
	}
	if take.Fence <= first.Fence || done.Fence != take.Fence || done.Outcome != "succeeded" {
		t.Errorf("takeover fence %d, finished fence %d outcome %s, first fence %d", take.Fence, done.Fence, done.Outcome, first.Fence)
	}
}
