package chaos

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the replica program: with childEnv set,
// TestMain runs its main instead of the tests.
const childEnv = "SLOTCRON_CHAOS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		ReplicaMain()
		return
	}
	os.Exit(m.Run())
}

var (
	flagStores   = flag.String("chaos.stores", "", "comma-separated stores for TestChaos (sqlite, redis, postgres, etcd); empty skips it")
	flagSeed     = flag.Uint64("chaos.seed", 0, "seed of the fault schedule; 0 picks one from the clock")
	flagDuration = flag.Duration("chaos.duration", 3*time.Minute, "how long TestChaos injects faults per store")
	flagReplicas = flag.Int("chaos.replicas", 4, "replicas per store")
	flagDir      = flag.String("chaos.dir", "", "keep the session's files (logs, configs) in this directory, which must be empty")
	flagLease    = flag.Duration("chaos.lease", 0, "every job's lease; 0 means the store's default (2s; 4s on etcd)")
	flagLoss     = flag.String("chaos.after-data-loss", "", "every job's after_data_loss: skip (the default) or run")
	flagEvery    = flag.Duration("chaos.every", 4*time.Second, "mean time between two faults")
)

// TestChaos is the full session, one per store named by -chaos.stores
// (make chaos).
func TestChaos(t *testing.T) {
	if *flagStores == "" {
		t.Skip("no -chaos.stores: run make chaos")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, store := range strings.Split(*flagStores, ",") {
		t.Run(store, func(t *testing.T) {
			runSession(t, Options{Store: store, Seed: seed, Duration: *flagDuration, Replicas: *flagReplicas,
				Lease: *flagLease, Every: *flagEvery, LatencyBound: true, AfterDataLoss: *flagLoss})
		})
	}
}

// TestChaosSmoke is a short session on Redis, the store with the most
// kinds of fault, run by make test. It judges every guarantee but reports
// takeover latency without judging it: a loaded machine running the race
// detector says little about latency.
func TestChaosSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	runSession(t, Options{Store: StoreRedis, Seed: uint64(time.Now().UnixNano()), Duration: 30 * time.Second, Replicas: 3,
		Lease: 3 * time.Second, Every: 2 * time.Second})
}

func runSession(t *testing.T, o Options) {
	o.Program = []string{os.Args[0]}
	o.Env = []string{childEnv + "=1"}
	o.Logf = t.Logf
	if *flagDir != "" {
		o.Dir = *flagDir + "/" + o.Store
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rep := Run(t, o)
	t.Log("\n" + rep.String())
	if fs := rep.Failures(); len(fs) > 0 {
		t.Errorf("%s\nreplay: %s", strings.Join(fs, "\n"), replay(o))
	}
	if rep.FaultCount() == 0 {
		t.Errorf("no fault was inflicted\nreplay: %s", replay(o))
	}
}

// replay is the command that runs the session again with its seed.
func replay(o Options) string {
	return fmt.Sprintf("go test ./internal/chaos -run 'TestChaos$' -count=1 -timeout 0 -v -args -chaos.stores=%s -chaos.seed=%d -chaos.duration=%v -chaos.replicas=%d -chaos.lease=%v -chaos.every=%v",
		o.Store, o.Seed, o.Duration, o.Replicas, o.Lease, o.Every)
}
