package leadertest

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
)

// Environment of a failover child: its marker, the name to campaign for,
// the lease.
const (
	childEnv = "SLOTCRON_LEADERTEST_FAILOVER_CHILD"
	nameEnv  = "SLOTCRON_LEADERTEST_FAILOVER_NAME"
)

// FailoverConfig configures Failover.
type FailoverConfig struct {
	// Start starts the store, in the parent only, and returns the
	// environment (KEY=value) that New needs to reach it. Failover sets it
	// in the parent with t.Setenv and children inherit it.
	Start func(t *testing.T) []string
	// New returns an elector on the store the environment describes, that
	// logs to logger. It runs in the parent and in every child.
	New func(t *testing.T, logger *slog.Logger) leader.Elector
	// Runs is how many leaders are killed; zero means 20.
	Runs int
	// Lease is the lease of every term; zero means one second.
	Lease time.Duration
}

// Failover measures takeover after a leader's process is killed: Runs
// times, a child process (the test binary, running only the calling test)
// becomes leader, is killed with SIGKILL at a random point of its
// renewal cycle, and the parent, waiting as follower, takes over. It logs
// the minimum, median and maximum time from the kill to the parent's new
// term, of the lease time that was left at the kill (from the last lease
// extension the child logged: the Acquire or renewal sent time plus half
// its round trip, plus the lease, minus the kill), and of their
// difference. It fails if a takeover came before the lease left had
// passed (with 5 ms for measurement error), or later than a generous bound
// after it (a few seconds; a takeover takes a round trip or two).
//
// Call it from a top-level test of its own; it skips under -short.
func Failover(t *testing.T, cfg FailoverConfig) {
	if cfg.Runs == 0 {
		cfg.Runs = 20
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Second
	}
	if os.Getenv(childEnv) != "" {
		runChild(t, cfg)
		return
	}
	if testing.Short() {
		t.Skip("failover timing kills leaders for about 30 s; run without -short")
	}
	for _, kv := range cfg.Start(t) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	name := nameFor(t)
	terms, resign := make(chan leader.Term, 1), make(chan struct{}, 1)
	p := leader.Params{Name: name, Replica: "parent", Lease: cfg.Lease, Cooldown: 50 * time.Millisecond}
	lead(t, cfg.New(t, slog.New(slog.DiscardHandler)), p, func(ctx context.Context, term leader.Term) {
		terms <- term
		select {
		case <-ctx.Done():
		case <-resign:
		}
	})
	awaitTerm(t, terms, 5*time.Second)

	var takeovers, lefts, excess []time.Duration
	for i := range cfg.Runs {
		c := startChild(t, name)
		c.await(t, "waiting for the lease", 10*time.Second)
		resign <- struct{}{}
		lastEv := c.await(t, "leadership acquired", 5*time.Second)
		if i%2 == 1 { // kill half the leaders after a renewal
			lastEv = c.await(t, "lease renewed", cfg.Lease+slowBound)
		}
		last := lastEv.extended()
		// Before the next renewal (sent Lease/3 after the last), so none is
		// in flight at the kill.
		killAt := last.Add(time.Duration(10+rand.IntN(int(cfg.Lease/3/time.Millisecond)-40)) * time.Millisecond)
		time.Sleep(time.Until(killAt))
		killed := time.Now()
		c.kill(t)
		term := awaitTerm(t, terms, cfg.Lease+5*time.Second)
		takeover := term.Start.Sub(killed)
		for _, ev := range c.rest() { // anything the child logged before it died
			if ev.msg == "lease renewed" || ev.msg == "leadership acquired" {
				lastEv, last = ev, ev.extended()
			}
		}
		left := last.Add(cfg.Lease).Sub(killed.Round(0))
		takeovers, lefts, excess = append(takeovers, takeover), append(lefts, left), append(excess, takeover-left)
		// The store extended the lease somewhere in the round trip: the
		// takeover may come up to half of it before the estimate, never
		// before the request was sent a lease ago.
		if takeover < left-lastEv.rtt/2-5*time.Millisecond || takeover > left+lastEv.rtt/2+slowBound {
			t.Errorf("run %d: takeover %v after the kill, with %v of the lease left (its last extension's round trip %v)", i, takeover, left, lastEv.rtt)
		}
	}
	t.Logf("failover over %d kills, lease %v:", cfg.Runs, cfg.Lease)
	t.Logf("  kill → new term:        %s", spread(takeovers))
	t.Logf("  lease left at the kill: %s", spread(lefts))
	t.Logf("  takeover − lease left:  %s", spread(excess))
}

// spread formats min/median/max of ds.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	return "min " + r(s[0]) + ", median " + r(s[len(s)/2]) + ", max " + r(s[len(s)-1])
}

// runChild is the child's side: campaign until killed, logging JSON to
// stdout at debug level for the parent to read.
func runChild(t *testing.T, cfg FailoverConfig) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := cfg.New(t, log)
	p := leader.Params{Name: os.Getenv(nameEnv), Replica: "child-" + strconv.Itoa(os.Getpid()), Lease: cfg.Lease}
	_ = e.Lead(context.Background(), p, func(ctx context.Context, _ leader.Term) { <-ctx.Done() })
}

// startChild starts the test binary running only the calling test, as a
// failover child campaigning for name.
func startChild(t *testing.T, name string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), childEnv+"=1", nameEnv+"="+name)
	dieWithParent(cmd)
	// A pipe of our own rather than StdoutPipe: Wait must not close the
	// reading end before the lines of a killed child are read.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start a failover child: %v", err)
	}
	c := &child{cmd: cmd, events: make(chan event, 256)}
	go func() {
		defer r.Close()
		c.read(r)
	}()
	t.Cleanup(func() { c.kill(t) })
	return c
}
