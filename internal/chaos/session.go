package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slotcron/slotcron/fence"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
	"github.com/slotcron/slotcron/slotstore/pgstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// Stores the harness runs on.
const (
	StoreSQLite   = "sqlite"
	StoreRedis    = "redis"
	StorePostgres = "postgres"
	StoreEtcd     = "etcd"
)

// Options configure a session. Zero values mean the defaults.
type Options struct {
	Store    string        // StoreSQLite, StoreRedis, StorePostgres or StoreEtcd; required
	Seed     uint64        // seeds every random choice of the fault schedule
	Duration time.Duration // how long faults are injected; default 1m
	Replicas int           // 3 to 5; default 4
	// Lease is every job's lease; default 2s, and 4s on etcd, whose
	// leader elections stall writes for up to two election timeouts plus
	// a request's timeout (a proposal lost with the dead leader): with 2 s
	// (a trust window of 1.8 s from the last renewal sent) a run that
	// finishes just after the leader dies cannot record it in time, and is
	// run again.
	Lease    time.Duration
	Deadline time.Duration // every job's starting_deadline; default 5s
	// AfterDataLoss is every job's after_data_loss: "" or "skip" (the
	// default), or "run", when the session also fails on a slot skipped
	// for a loss of data, and a slot run again across a loss is no breach
	// (its effect through the once-per-slot helper still must be one).
	AfterDataLoss string
	Every         time.Duration // mean time between two faults; default 4s
	// LatencyBound fails a session whose takeovers p99 come later than
	// one renewal interval past the lease the holder had left. Short
	// sessions on a loaded machine report the latency without judging it.
	LatencyBound bool
	// Program is the replica program's argv, before "run --config FILE";
	// Env is added to its environment.
	Program []string
	Env     []string
	// Dir keeps the session's files (configs, logs, the SQLite store); it
	// must be empty or absent. Empty means a temporary directory removed
	// at the end.
	Dir string
	// Logf reports progress; nil means silent.
	Logf func(format string, args ...any)
}

func (o *Options) setDefaults() error {
	switch o.Store {
	case StoreSQLite, StoreRedis, StorePostgres, StoreEtcd:
	default:
		return fmt.Errorf("chaos: store %q: want %s, %s, %s or %s", o.Store, StoreSQLite, StoreRedis, StorePostgres, StoreEtcd)
	}
	if len(o.Program) == 0 {
		return fmt.Errorf("chaos: no replica program")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Duration, time.Minute)
	if o.Store == StoreEtcd {
		def(&o.Lease, 4*time.Second)
	}
	def(&o.Lease, 2*time.Second)
	def(&o.Deadline, 5*time.Second)
	def(&o.Every, 4*time.Second)
	if o.Replicas == 0 {
		o.Replicas = 4
	}
	if o.Replicas < 3 || o.Replicas > 5 {
		return fmt.Errorf("chaos: %d replicas: want 3 to 5", o.Replicas)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	switch o.AfterDataLoss {
	case "", "skip", "run":
	default:
		return fmt.Errorf("chaos: after_data_loss %q: want skip or run", o.AfterDataLoss)
	}
	return nil
}

// runsAfterLoss reports whether the jobs are declared after_data_loss: run.
func (o *Options) runsAfterLoss() bool { return o.AfterDataLoss == "run" }

// defaults is the configuration's defaults line, every job's policies.
func (s *session) defaults() string {
	extra := ""
	if s.o.AfterDataLoss != "" {
		extra = ", after_data_loss: " + s.o.AfterDataLoss
	}
	return fmt.Sprintf("defaults: {lease: %s, starting_deadline: %s, max_attempts: 20, history: 24h, on_crash: retry%s}\n",
		s.o.Lease, s.o.Deadline, extra)
}

// session is one run of the harness.
type session struct {
	t   testing.TB
	o   Options
	dir string
	ctl control

	rngMu sync.Mutex
	rng   *rand.Rand

	effects    *pgxpool.Pool // the checker's database; faults never touch it
	effectsDSN string
	store      slotstore.Store // the harness's own view of the store, without proxy
	storeDSN   string          // Postgres only
	redis      *testserver.Redis
	pg         *testserver.Postgres
	etcd       *testserver.EtcdCluster

	members []*member

	mu      sync.Mutex
	faults  []Fault
	probes  []*probe
	markers map[slotKey][]slotstore.Marker // every version of each marker seen, in order
	odd     []string                       // what cannot be explained
	phase   int
	started time.Time // every replica has started
	stopped time.Time // faults ended
}

// slotKey names a slot.
type slotKey struct {
	job  string
	slot time.Time
}

func (k slotKey) String() string { return k.job + "@" + k.slot.UTC().Format(time.RFC3339) }

// Run starts the servers and the replicas, injects faults for o.Duration,
// lets the replicas settle, stops them and checks what happened.
func Run(t testing.TB, o Options) *Report {
	t.Helper()
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	dir := o.Dir
	if dir == "" {
		// Kept when the session fails: its logs are what explains it.
		d, err := os.MkdirTemp("", "slotcron-chaos-"+o.Store+"-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("chaos: the session's files (logs, configs, store) are kept in %s", dir)
				return
			}
			os.RemoveAll(dir)
		})
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		t.Fatalf("chaos: %s is not empty: a session starts on a fresh store and control directory", dir)
	}
	s := &session{t: t, o: o, dir: dir, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5107c0)),
		markers: map[slotKey][]slotstore.Marker{}}
	s.ctl = control{dir: filepath.Join(s.dir, "control")}
	if err := os.MkdirAll(s.ctl.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.startServers()
	s.putSchedules()
	s.startReplicas()
	ctx, cancel := context.WithCancel(context.Background())
	var watchers sync.WaitGroup
	watchers.Go(func() { s.snapshotLoop(ctx) })
	s.injectFaults(o.Duration)
	s.settle()
	cancel()
	watchers.Wait()
	s.snapshot(context.Background())
	return s.check()
}

func (s *session) logf(format string, args ...any) { s.o.Logf(format, args...) }

// intn and between draw from the session's seeded source.
func (s *session) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *session) between(lo, hi time.Duration) time.Duration {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// startServers starts the checker's Postgres and the store's server, and
// opens the harness's own connections to both.
func (s *session) startServers() {
	ctx := context.Background()
	epg := testserver.StartPostgres(s.t)
	s.effectsDSN = epg.DSN()
	pool, err := pgxpool.New(ctx, s.effectsDSN)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(pool.Close)
	s.effects = pool
	if _, err := pool.Exec(ctx, effectsSchema); err != nil {
		s.t.Fatalf("chaos: effects schema: %v", err)
	}
	if err := (fence.PG{}).Ensure(ctx, pool); err != nil {
		s.t.Fatalf("chaos: %v", err)
	}
	var st slotstore.Store
	switch s.o.Store {
	case StoreSQLite:
		st, err = sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(s.dir, "slotcron.db")})
	case StoreRedis:
		s.redis = testserver.StartRedis(s.t)
		st, err = redisstore.Open(ctx, redisstore.Options{Addrs: []string{s.redis.Addr()}})
	case StorePostgres:
		s.pg = testserver.StartPostgres(s.t)
		s.storeDSN = s.pg.DSN()
		st, err = pgstore.Open(ctx, pgstore.Options{DSN: s.storeDSN})
	case StoreEtcd:
		// The default prefix, as the replicas' configs use.
		s.etcd = testserver.StartEtcd(s.t, testserver.EtcdConfig{})
		st, err = etcdstore.Open(ctx, etcdstore.Options{Endpoints: s.etcd.Endpoints()})
	}
	if err != nil {
		s.t.Fatalf("chaos: open the %s store: %v", s.o.Store, err)
	}
	s.t.Cleanup(func() { _ = st.Close() })
	s.store = st
}

// effectsSchema is the checker's database: every start, and each effect in
// the three write styles.
const effectsSchema = `
CREATE TABLE starts (job text NOT NULL, slot timestamptz NOT NULL, fence bigint NOT NULL, attempt int NOT NULL,
	replica text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE effect_once (LIKE starts INCLUDING DEFAULTS);
CREATE TABLE effect_fenced (LIKE starts INCLUDING DEFAULTS);
CREATE TABLE effect_plain (LIKE starts INCLUDING DEFAULTS, checked timestamptz);
CREATE TABLE refusals (LIKE starts INCLUDING DEFAULTS, style text NOT NULL, kind text NOT NULL);
`

// jobSpec is a job of the session.
type jobSpec struct {
	name   string
	every  time.Duration // the schedule: every period, aligned to the epoch
	spec   string
	yaml   string // the rest of the job's YAML flow mapping
	effect string // the table its effect is checked in
	// api makes the job a schedule held as data, put through the Go API
	// (schedules.go) rather than written in the replicas' YAML; yaml then
	// holds its run and params as JSON.
	api bool
}

func (s *session) jobs() []jobSpec {
	js := []jobSpec{
		{"tick", time.Second, "* * * * * *", "run: work, params: {min: 50ms, max: 300ms}", "effect_once", false},
		{"slow", 5 * time.Second, "*/5 * * * * *", "run: work, params: {min: 3s, max: 3s, honour_ctx: true}", "effect_once", false},
		{"minute", time.Minute, "0 * * * * *", "run: work, params: {min: 1s, max: 2s}", "effect_once", false},
		{"tenant-tick", 2 * time.Second, "*/2 * * * * *", `{"min": "50ms", "max": "300ms"}`, "effect_once", true},
		{"tenant-slow", 5 * time.Second, "*/5 * * * * *", `{"min": "2s", "max": "2s", "honour_ctx": true}`, "effect_once", true},
	}
	if s.o.Store == StorePostgres {
		js = append(js, jobSpec{"ledger", time.Second, "* * * * * *", "run: complete, params: {dsn: '${" + envLedger + "}', min: 50ms, max: 200ms}", "chaos_complete", false})
	}
	return js
}

// writeConfig writes the config of replica m: its store is reached through
// its proxy.
func (s *session) writeConfig(m *member) {
	var store, dsn string
	switch s.o.Store {
	case StoreSQLite:
		store = fmt.Sprintf("{kind: sqlite, sqlite: {path: %q}}", filepath.Join(s.dir, "slotcron.db"))
	case StoreRedis:
		store = fmt.Sprintf("{kind: redis, redis: {addr: %q}}", m.proxy.Addr())
	case StorePostgres:
		dsn = s.memberDSN(m)
		store = fmt.Sprintf("{kind: postgres, postgres: {dsn: %q}}", dsn)
	case StoreEtcd:
		// Every member, directly: the client fails over between them.
		var eps []string
		for _, e := range s.etcd.Endpoints() {
			eps = append(eps, strconv.Quote(e))
		}
		store = fmt.Sprintf("{kind: etcd, etcd: {endpoints: [%s]}}", strings.Join(eps, ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replica: ${%s}\nstore: %s\nlog: {format: json, level: debug}\nshutdown_grace: 3s\n", envReplica, store)
	b.WriteString(s.defaults() + "jobs:\n")
	for _, j := range s.jobs() {
		if j.api {
			continue // put through the Go API (schedules.go)
		}
		rest := j.yaml
		if strings.Contains(rest, "%q") {
			rest = fmt.Sprintf(rest, dsn)
		}
		fmt.Fprintf(&b, "  %s: {schedule: %q, %s}\n", j.name, j.spec, rest)
	}
	if err := os.WriteFile(m.config, []byte(b.String()), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// memberDSN is the store's DSN as member m reaches it, through its proxy.
func (s *session) memberDSN(m *member) string {
	return strings.Replace(s.storeDSN, fmt.Sprintf(":%d/", s.pg.Port()), ":"+proxyPort(m.proxy)+"/", 1)
}

func proxyPort(p *testserver.Proxy) string {
	addr := p.Addr()
	return addr[strings.LastIndexByte(addr, ':')+1:]
}

// storeAddr is the address the proxies forward to, or "" for a store the
// replicas reach with no proxy (a SQLite file; etcd, whose client talks to
// every member).
func (s *session) storeAddr() string {
	switch s.o.Store {
	case StoreRedis:
		return s.redis.Addr()
	case StorePostgres:
		return fmt.Sprintf("127.0.0.1:%d", s.pg.Port())
	}
	return ""
}
