package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// logLine is one line a replica wrote to stderr: a JSON log line, or raw
// text (a race report, a panic).
type logLine struct {
	Time    time.Time `json:"time"`
	Msg     string    `json:"msg"`
	Level   string    `json:"level"`
	Job     string    `json:"job"`
	Slot    string    `json:"slot"`
	Fence   int64     `json:"fence"`
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason"`
	raw     string
	replica string
	seen    time.Time // when the harness read it
}

// endMsgs end a run in the log.
var endMsgs = map[string]bool{
	"run finished": true, "lease lost": true, "run ended after lease lost; outcome not recorded": true,
	"run replaced": true, "run replaced; outcome not recorded": true, "run failed; retry scheduled": true,
	"run released": true, "release failed; the slot is taken over when its lease ends": true, "job panicked": true,
}

// runRef names one attempt of a slot.
type runRef struct {
	job, slot string
	fence     int64
}

// member is one replica: its process, restarted after each death, and
// what the harness learnt from its log.
type member struct {
	name   string
	config string
	proxy  *testserver.Proxy // between it and the store; nil on SQLite and etcd
	log    *os.File
	// restarts draws the pause before each restart; only the goroutine
	// that saw the process end uses it.
	restarts *rand.Rand

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	up      bool                 // a process is running (possibly stopped)
	frozen  bool                 // SIGSTOPped
	busy    bool                 // a fault is acting on it
	expect  bool                 // the harness killed it: the exit is no surprise
	armed   string               // the action armed at a fault point, "" when none
	running map[runRef]time.Time // runs started and not ended, by their log
	lines   []logLine
}

// start runs a new process of the replica program.
func (m *member) start(argv, env []string, onExit func(m *member, state *os.ProcessState, held []runRef)) error {
	cmd := exec.Command(argv[0], append(append([]string(nil), argv[1:]...), "run", "--config", m.config)...)
	cmd.Env = append(append(os.Environ(), env...), envReplica+"="+m.name)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = m.log
	testserver.OrphanProof(cmd) // no replica outlives a test binary that dies
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chaos: start %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.exited, m.up, m.frozen, m.expect, m.busy = cmd, exited, true, false, false, false
	m.running = map[runRef]time.Time{}
	m.mu.Unlock()
	go func() {
		m.read(stderr)
		_ = cmd.Wait()
		held := m.holding()
		m.mu.Lock()
		m.up, m.frozen = false, false
		m.running = nil
		m.mu.Unlock()
		// Before waiters hear of the exit, so what onExit records is
		// there when they go on.
		onExit(m, cmd.ProcessState, held)
		close(exited)
	}()
	return nil
}

// read keeps the process's log lines until its stderr closes.
func (m *member) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		fmt.Fprintln(m.log, text)
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			l = logLine{}
		}
		l.raw, l.replica, l.seen = text, m.name, time.Now()
		m.mu.Lock()
		m.lines = append(m.lines, l)
		ref := runRef{l.Job, l.Slot, l.Fence}
		switch {
		case l.Msg == "run started" && m.running != nil:
			m.running[ref] = l.seen
		case endMsgs[l.Msg]:
			delete(m.running, ref)
		}
		m.mu.Unlock()
	}
}

// signal sends sig to the running process, if any.
func (m *member) signal(sig syscall.Signal) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up {
		return false
	}
	switch sig {
	case syscall.SIGKILL:
		m.expect = true
	case syscall.SIGSTOP:
		m.frozen = true
	case syscall.SIGCONT:
		m.frozen = false
	}
	return m.cmd.Process.Signal(sig) == nil
}

// holding lists the runs the replica has started and not ended.
func (m *member) holding() []runRef {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []runRef
	for r := range m.running {
		out = append(out, r)
	}
	return out
}

// stopped reports whether the process is stopped (state T in
// /proc/PID/stat), as after a SIGSTOP it sent itself.
func (m *member) stopped() bool {
	m.mu.Lock()
	cmd, up := m.cmd, m.up
	m.mu.Unlock()
	if !up {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && (f[0] == "T" || f[0] == "t")
}

// healthy reports whether the replica is up, not frozen, and free of faults.
func (m *member) healthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up && !m.frozen && !m.busy
}

// claim marks the replica busy with a fault, if it is healthy.
func (m *member) claim() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up || m.frozen || m.busy {
		return false
	}
	m.busy = true
	return true
}

func (m *member) release() {
	m.mu.Lock()
	m.busy = false
	m.mu.Unlock()
}

// wait waits for the current process to exit, for at most d.
func (m *member) wait(d time.Duration) bool {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// allLines returns every line read so far.
func (m *member) allLines() []logLine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]logLine(nil), m.lines...)
}

// alarming reports whether a raw line says something went wrong inside
// the process: a race (under -race), a panic, a fatal error.
func alarming(raw string) bool {
	for _, s := range []string{"WARNING: DATA RACE", "panic:", "fatal error:", "job panicked"} {
		if strings.Contains(raw, s) {
			return true
		}
	}
	return false
}
