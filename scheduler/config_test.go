package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

func demoRegistry() *jobs.Registry {
	reg := jobs.NewRegistry()
	for _, name := range []string{"hello", "sleep", "fail"} {
		reg.Register(name, func(context.Context, jobs.Run) error { return nil })
	}
	reg.RegisterDuty("owner", func(ctx context.Context, _ jobs.Duty) error { <-ctx.Done(); return nil })
	return reg
}

// The four kinds of mistake named in the contract are all reported at once,
// each with its line and key.
func TestValidateReportsEveryProblem(t *testing.T) {
	_, err := LoadAndValidate("testdata/bad.yaml", demoRegistry())
	var errs ConfigErrors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v is not ConfigErrors", err)
	}
	want := []struct {
		line int
		key  string
		msg  string
	}{
		{8, "jobs.hello.colour", "unknown key"},
		{11, "jobs.broken.schedule", "61"},
		{15, "jobs.berlin.timezone", `unknown time zone "Europe/Berln"`},
		{16, "jobs.ghost", `no function registered as "ghost"`},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		e := errs[i]
		if e.File != "testdata/bad.yaml" || e.Line != w.line || e.Key != w.key || !strings.Contains(e.Msg, w.msg) {
			t.Errorf("error %d = %q; want line %d key %s containing %q", i, e, w.line, w.key, w.msg)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown top key", "jobz: {}\n", `test.yaml:1: jobz: unknown key (did you mean "jobs"?)`},
		{"bad duration", "defaults:\n  lease: 15x\n", `test.yaml:2: defaults.lease: invalid duration "15x"`},
		{"wrong type", "defaults:\n  max_attempts: many\n", `test.yaml:2: defaults.max_attempts: want a whole number, not "many"`},
		{"duration beyond int64", "defaults:\n  lease: 3000000h\n", `test.yaml:2: defaults.lease: duration "3000000h" is too long`},
		{"key found by value on a flow line", "jobs: {hello: {schedule: '@hourly', timeout: 15x}}\n", `test.yaml:1: jobs.hello.timeout: invalid duration "15x"`},
		{"duplicate job", "jobs:\n  hello: {schedule: '@hourly'}\n  hello: {schedule: '@daily'}\n", "test.yaml:3: jobs.hello: set twice in one mapping: first at line 2"},
		{"syntax", "jobs: [\n", "test.yaml:"},
		{"nested unknown", "store:\n  sqlite:\n    pth: x.db\n", `test.yaml:3: store.sqlite.pth: unknown key (did you mean "path"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if !IsConfigError(err) {
				t.Errorf("%v is not a config error", err)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"short lease", "jobs: {hello: {schedule: '@hourly', lease: 500ms}}", "jobs.hello.lease: lease 500ms is shorter than 1s"},
		{"history too short", "defaults: {history: 30s}\njobs: {hello: {schedule: '@hourly'}}", "defaults.history: history 30s is shorter than"},
		{"bad on_crash", "jobs: {hello: {schedule: '@hourly', on_crash: panic}}", `on_crash "panic"`},
		{"local zone", "defaults: {timezone: Local}\njobs: {hello: {schedule: '@hourly'}}", `time zone "Local"`},
		{"missing schedule", "jobs: {hello: {}}", "jobs.hello: schedule is required"},
		{"bad store", "store: {kind: mongo}", `unknown store kind "mongo" (sqlite, memory, redis, postgres or etcd)`},
		{"etcd without endpoints", "store: {kind: etcd}", "store.etcd: store.kind is etcd but store.etcd.endpoints is empty"},
		{"etcd endpoint without scheme", "store: {kind: etcd, etcd: {endpoints: ['10.0.0.1:2379']}}", "store.etcd.endpoints: entry 1"},
		{"etcd tls half cert", "store: {kind: etcd, etcd: {endpoints: ['https://e:2379'], tls: {key_file: k.pem}}}", "store.etcd.tls.key_file: is set but cert_file is not"},
		{"etcd tls on http", "store: {kind: etcd, etcd: {endpoints: ['http://e:2379'], tls: {ca_file: ca.pem}}}", "store.etcd.tls: settings given but the endpoints are http://"},
		{"etcd lease_ttl fraction", "store: {kind: etcd, etcd: {endpoints: ['http://e:2379'], lease_ttl: 1500ms}}", "store.etcd.lease_ttl: 1.5s is not a whole number of seconds"},
		{"redis empty addr", "store: {kind: redis, redis: {addrs: ['']}}", "store.redis.addrs: entry 1 is empty"},
		{"redis tls off", "store: {kind: redis, redis: {addr: x:1, tls: {enabled: false, ca_file: ca.pem}}}", "store.redis.tls: ca_file given but tls is off"},
		{"redis tls half cert", "store: {kind: redis, redis: {addr: x:1, tls: {cert_file: c.pem}}}", "cert_file and key_file go together"},
		{"redis tls bad", "store: {kind: redis, redis: {addr: x:1, tls: maybe}}", "tls: want true, false or a mapping"},
		{"postgres without dsn", "store: {kind: postgres, postgres: {dsn: '${SLOTCRON_TEST_UNSET_DSN:-}'}}", "store.postgres.dsn: store.kind is postgres but store.postgres.dsn is empty"},
		{"bad log", "log: {format: xml, level: loud}", `unknown log format "xml"`},
		{"never fires", "jobs: {hello: {schedule: '0 0 30 2 *'}}", "never fires"},
		{"sub-second every", "jobs: {hello: {schedule: '@every 1500ms'}}", "jobs.hello.schedule"},
		{"unregistered run", "jobs: {x: {run: nope, schedule: '@hourly'}}", `jobs.x.run: no function registered as "nope"`},
		{"unregistered duty", "duties: {fanout: {lease: 5s}}", `duties.fanout: no duty registered as "fanout" (registered: owner)`},
		{"short duty lease", "duties: {owner: {lease: 100ms}}", `duties.owner.lease: lease 100ms is shorter than 1s`},
		{"long lease", "jobs: {hello: {schedule: '@hourly', lease: 25h}}", "jobs.hello.lease: lease 25h0m0s is longer than 24h0m0s"},
		{"long duty lease", "duties: {owner: {lease: 48h}}", "duties.owner.lease: lease 48h0m0s is longer than 24h0m0s"},
		{"long timeout", "jobs: {hello: {schedule: '@hourly', timeout: 100000h}}", "jobs.hello.timeout: timeout 100000h0m0s is longer than 87600h0m0s"},
		{"long backoff", "defaults: {retries: {max: 3, backoff: 2h, max_backoff: 4h}}\njobs: {hello: {schedule: '@hourly'}}", "defaults.retries.backoff: retries.backoff 2h0m0s is longer than 1h0m0s"},
		{"long max backoff", "jobs: {hello: {schedule: '@hourly', retries: {max: 3, max_backoff: 100000h}}}", "jobs.hello.retries.max_backoff: retries.max_backoff 100000h0m0s is longer than 87600h0m0s"},
		{"long shutdown grace", "shutdown_grace: 100000h", "shutdown_grace: shutdown_grace 100000h0m0s is longer than 87600h0m0s"},
		{"long redis timeout", "store: {kind: redis, redis: {addr: x:1, read_timeout: 100000h}}", "store.redis.read_timeout: 100000h0m0s is longer than"},
		{"redis without addr", "store: {kind: redis, redis: {addr: '${SLOTCRON_TEST_UNSET_ADDR:-}'}}", "store.redis: store.kind is redis but no redis addr or addrs is set"},
		{"postgres without dsn, and more", "store: {kind: postgres, postgres: {dsn: '', pool_size: -1}}", "store.postgres.pool_size: must not be negative"},
		{"store duration too long", "store:\n  kind: redis\n  redis: {addr: 'x:1'}\n  postgres:\n    statement_timeout: 3000000h\n", `test.yaml:5: store.postgres.statement_timeout: duration "3000000h" is too long`},
		{"store duration bad", "store:\n  redis:\n    dial_timeout: {a: 1}\n    read_timeout: 5x\n", "test.yaml:4: store.redis.read_timeout: invalid duration \"5x\""},
		{"store duration negative", "store:\n  sqlite:\n    busy_timeout: -1s\n", `test.yaml:3: store.sqlite.busy_timeout: negative duration "-1s"`},
		{"zero timeout", "jobs: {hello: {schedule: '@hourly', timeout: 0s}}", "test.yaml:1: jobs.hello.timeout: a timeout of 0s would end every run"},
		{"zero starting_deadline", "defaults:\n  starting_deadline: 0s\njobs: {hello: {schedule: '@hourly'}}", "test.yaml:2: defaults.starting_deadline: a starting_deadline of 0s would miss every slot"},
		{"zero job lease", "jobs: {hello: {schedule: '@hourly', lease: 0s}}", "jobs.hello.lease: a lease of 0s"},
		{"zero duty lease", "duties:\n  owner:\n    lease: 0s\n", "test.yaml:3: duties.owner.lease: a lease of 0s would end before the duty began"},
		{"zero history", "defaults: {history: '0'}\njobs: {hello: {schedule: '@hourly'}}", "defaults.history: a history of 0s"},
		{"zero max_backoff", "jobs: {hello: {schedule: '@hourly', retries: {max_backoff: 0ms}}}", "jobs.hello.retries.max_backoff: a retries.max_backoff of 0s"},
		{"zero shutdown_grace", "shutdown_grace: 0s\njobs: {hello: {schedule: '@hourly'}}", "test.yaml:1: shutdown_grace: a shutdown_grace of 0s"},
		{"tls without its key", "http: {listen: '127.0.0.1:0', tls: {cert_file: /nonexistent.pem}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.key_file: TLS needs the key's file"},
		{"tls with unreadable files", "http: {listen: '127.0.0.1:0', tls: {cert_file: /nonexistent.pem, key_file: /nonexistent.key}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.cert_file: open /nonexistent.pem"},
		{"tls client role unknown", "http: {tls: {cert_file: a, key_file: b, client_ca_file: c, client_roles: {x: boss}}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.client_roles: x: unknown role \"boss\""},
		{"tls client roles without a CA", "http: {tls: {cert_file: a, key_file: b, client_roles: {x: admin}}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.client_roles: client roles need client_ca_file"},
		{"tls client role named empty", "http: {tls: {cert_file: a, key_file: b, client_ca_file: c, client_roles: {\"\": admin}}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.client_roles: an empty common name"},
		{"tls client role named as a token", "http: {token: x, tls: {cert_file: a, key_file: b, client_ca_file: c, client_roles: {token: admin}}}\njobs: {hello: {schedule: '@hourly'}}", "http.tls.client_roles: token: a token has that name too"},
		{"zero actions_history", "actions_history: 0s\njobs: {hello: {schedule: '@hourly'}}", "test.yaml:1: actions_history: an actions_history of 0s"},
		{"long actions_history", "actions_history: 100000h\njobs: {hello: {schedule: '@hourly'}}", "test.yaml:1: actions_history: actions_history 100000h0m0s is longer"},
		{"unknown calendar", "calendars: {de: {dates: [2026-12-25]}}\njobs:\n  hello: {schedule: '@daily', except: [fr]}", `test.yaml:3: jobs.hello.except: no calendar named "fr" (calendars: de)`},
		{"bad calendar date", "calendars:\n  de:\n    dates: [2026-02-30]\n", `test.yaml:3: calendars.de.dates: date "2026-02-30" (entry 1): want YYYY-MM-DD`},
		{"bad dst gap", "jobs:\n  hello: {schedule: '@daily', dst: {gap: later}}", `jobs.hello.dst.gap: dst.gap "later": want shift or skip`},
		{"bad dst repeat", "defaults: {dst: {repeat: twice}}", `defaults.dst.repeat: dst.repeat "twice": want first or both`},
		{"dst on elapsed time", "jobs:\n  hello: {schedule: '*/5 * * * *', dst: {gap: skip}}", "test.yaml:2: jobs.hello.dst: bad spec \"*/5 * * * *\": DST rule gap=skip repeat=first applies to fixed-time schedules only"},
		{"max_runs without from", "jobs:\n  hello:\n    schedule: '@daily'\n    max_runs: 3\n", "test.yaml:4: jobs.hello.max_runs: max_runs needs active.from"},
		{"max_runs negative", "jobs: {hello: {schedule: '@daily', max_runs: -1}}", "jobs.hello.max_runs: max_runs -1: want 0 (no limit) to 100000"},
		{"active backwards", "jobs:\n  hello:\n    schedule: '@daily'\n    active: {from: 2027-01-01T00:00:00Z, until: 2026-01-01T00:00:00Z}\n", "jobs.hello.active.until: active.until 2026-01-01T00:00:00Z is before active.from 2027-01-01T00:00:00Z"},
		{"bad active time", "jobs:\n  hello:\n    schedule: '@daily'\n    active: {from: tomorrow}\n", `test.yaml:4: jobs.hello.active.from: "tomorrow" is not a time`},
		{"max_runs past 9999", "jobs:\n  hello:\n    schedule: '0 0 1 1 *'\n    active: {from: 2026-01-01T00:00:00Z}\n    max_runs: 100000\n", "test.yaml:5: jobs.hello.max_runs: max_runs 100000: the last of them would fall in the year 102025, past 9999"},
		{"max_runs out of reach", "jobs:\n  hello:\n    schedule: '0 0 29 2 *'\n    active: {from: 2026-01-01T00:00:00Z}\n    max_runs: 30\n", "jobs.hello.max_runs: max_runs 30: the schedule has fewer slots from active.from than that within reach"},
		{"queue misspelt", "jobs: {hello: {schedule: '@daily', overlap: queued}}", `overlap "queued": want allow, forbid, replace or queue`},
		{"big catch_up_limit", "jobs: {hello: {schedule: '@hourly', catch_up: all, catch_up_limit: 100000000}}", "jobs.hello.catch_up_limit: catch_up_limit 100000000 is more than 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(tc.doc))
			if err == nil {
				err = cfg.Validate(demoRegistry())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEnvExpansionAndDefaults(t *testing.T) {
	t.Setenv("SLOTCRON_TEST_DB", "/var/lib/x.db")
	t.Setenv("SLOTCRON_TEST_EMPTY", "")
	t.Setenv("SLOTCRON_TEST_ATTEMPTS", "5")
	t.Setenv("SLOTCRON_TEST_TRICKY", "web-1 # pod: x\nunknown: 1")
	doc := `
replica: ${SLOTCRON_TEST_UNSET_VAR}${SLOTCRON_TEST_TRICKY}
store: {sqlite: {path: "${SLOTCRON_TEST_DB}"}}
log: {format: "${SLOTCRON_TEST_EMPTY:-json}"}
defaults: {lease: 30s, timezone: Europe/Berlin, max_attempts: ${SLOTCRON_TEST_ATTEMPTS}}
jobs:
  hello: {schedule: "0 2 * * *", timeout: 5s}
  cost: {run: sleep, schedule: "@every 30s", lease: 2s, params: {duration: 1s, note: "pa$$word $${HOME}"}}
`
	cfg, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := cfg.Store.Options.(sqlitestore.Options); o.Path != "/var/lib/x.db" || cfg.Log.Format != "json" || cfg.Replica != "web-1 # pod: x\nunknown: 1" ||
		cfg.Defaults.MaxAttempts != 5 {
		t.Errorf("expanded config %+v", cfg)
	}
	plans, _, err := cfg.resolve(demoRegistry())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]engine.JobSpec{}
	for _, p := range plans {
		byName[p.Name] = p
	}
	hello, cost := byName["hello"], byName["cost"]
	if hello.Lease != 30*time.Second || hello.Timeout != 5*time.Second || hello.Deadline != DefaultStartingDeadline ||
		hello.Schedule.Location().String() != "Europe/Berlin" || hello.MaxAttempts != 5 {
		t.Errorf("hello job %+v", hello)
	}
	if cost.Lease != 2*time.Second || cost.Timeout != DefaultTimeout {
		t.Errorf("cost job %+v", cost)
	}
	var p struct {
		Duration time.Duration `yaml:"duration"`
		Note     string        `yaml:"note"`
	}
	if err := (jobs.Run{Job: "cost"}).WithParams(cost.Params).Params(&p); err != nil || p.Duration != time.Second || p.Note != "pa$$word ${HOME}" {
		t.Errorf("params %+v, %v", p, err)
	}
}

func TestExampleConfigIsValid(t *testing.T) {
	cfg, err := Load("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(demoRegistry()); err != nil {
		t.Fatal(err)
	}
}

// A value from the environment never moves the lines errors point at, nor
// changes the document's structure.
func TestEnvValuesKeepLines(t *testing.T) {
	t.Setenv("SLOTCRON_TEST_MULTI", "a\nb\nc: d")
	doc := "replica: ${SLOTCRON_TEST_MULTI}\nstore: {kind: sqlite}\nshedule: x\n"
	_, err := Parse("test.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "test.yaml:3: shedule: unknown key") {
		t.Errorf("error %v, want the unknown key on line 3", err)
	}
}

// Durations that each fit but whose sum overflows time.Duration are refused,
// each where it is set, and the overflowed sum does not slip past the
// history rule (it used to: 2000000h + 2000000h is negative).
func TestValidateRejectsOverflow(t *testing.T) {
	doc := `defaults:
  lease: 2000000h
  starting_deadline: 2000000h
  history: 2000000h
jobs:
  hello:
    schedule: '@every 1s'
    catch_up: all
    catch_up_limit: 1000000000
  sleep:
    schedule: '@hourly'
    starting_deadline: 1000000h
    history: 1000000h
`
	cfg, err := Parse("big.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(demoRegistry())
	var errs ConfigErrors
	if !errors.As(err, &errs) {
		t.Fatalf("Validate accepted durations whose sums overflow: %v", err)
	}
	want := []string{
		"big.yaml:2: defaults.lease: lease 2000000h0m0s is longer than 24h0m0s",
		"big.yaml:3: defaults.starting_deadline: starting_deadline 2000000h0m0s is longer than 87600h0m0s",
		"big.yaml:4: defaults.history: history 2000000h0m0s is longer than 87600h0m0s",
		"big.yaml:9: jobs.hello.catch_up_limit: catch_up_limit 1000000000 is more than 1000",
		"big.yaml:12: jobs.sleep.starting_deadline: starting_deadline 1000000h0m0s is longer than 87600h0m0s",
		"big.yaml:13: jobs.sleep.history: history 1000000h0m0s is longer than 87600h0m0s",
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want prefix %q", i, errs[i], w)
		}
	}
}

// ConfigErrors unwraps to its problems: errors.As finds each *ConfigError,
// with its file, line and key, through any wrapping.
func TestConfigErrorsUnwrap(t *testing.T) {
	_, err := Parse("test.yaml", []byte("defaults:\n  lease: 15x\njobz: {}\n"))
	var one *ConfigError
	if !errors.As(fmt.Errorf("loading: %w", err), &one) {
		t.Fatalf("errors.As found no *ConfigError in %v", err)
	}
	if one.File != "test.yaml" || one.Line != 2 || one.Key != "defaults.lease" {
		t.Errorf("first problem %+v, want test.yaml:2 defaults.lease", one)
	}
}
