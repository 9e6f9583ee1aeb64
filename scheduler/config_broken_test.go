package scheduler

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

// goOrTag matches what a person did not write and should not have to read
// in a message about their file: YAML's tags, Go's type names and go-yaml's
// wording.
var goOrTag = regexp.MustCompile(`!!|\bmap\[|\[\]|\b(u?int(8|16|32|64)?|float(32|64)|bool|string|struct|interface)\b|` +
	`\b(time|scheduler|policy|yaml|redisstore|sqlitestore|pgstore|etcdstore|slotstore)\.[A-Z]|unmarshal|<document`)

// Broken configurations, each as an operator might write it: every problem
// names the file, the line and the key, in words without YAML tags or Go
// types; a tab in the indentation is called a tab.
func TestBrokenConfigs(t *testing.T) {
	t.Setenv("SLOTCRON_TEST_SET", "x")
	t.Setenv("SLOTCRON_TEST_EMPTY", "")
	for _, tc := range []struct {
		name, doc string
		line      int
		key, msg  string
	}{
		// Tabs.
		{"tab before a job", "jobs:\n\thello: {schedule: '@hourly'}\n", 2, "jobs.hello", "a tab in the indentation"},
		{"tab before a key", "jobs:\n  hello:\n\tschedule: '@hourly'\n", 3, "jobs.hello.schedule", "a tab in the indentation"},
		{"tab after a value", "jobs:\n  hello:\n    schedule: '@hourly'\n    lease: 5s\n\t\n", 5, "jobs.hello", "a tab"},
		// Values of the wrong kind.
		{"duration list", "defaults:\n  lease: [1, 2]\n", 2, "defaults.lease", "want a duration such as 15s, not a list"},
		{"duration mapping", "defaults:\n  lease: {a: 1}\n", 2, "defaults.lease", "want a duration such as 15s, not a mapping"},
		{"duration without unit", "jobs:\n  hello:\n    schedule: '@hourly'\n    timeout: 10\n", 4, "jobs.hello.timeout", `invalid duration "10"`},
		{"duration in days", "jobs:\n  hello:\n    schedule: '@hourly'\n    lease: 1d\n", 4, "jobs.hello.lease", `invalid duration "1d"`},
		{"number as word", "defaults:\n  max_attempts: many\n", 2, "defaults.max_attempts", `want a whole number, not "many"`},
		{"number with a fraction", "defaults:\n  max_attempts: 1.5\n", 2, "defaults.max_attempts", `want a whole number, not "1.5"`},
		{"infinite number", "defaults:\n  catch_up_limit: .inf\n", 2, "defaults.catch_up_limit", `want a whole number, not ".inf"`},
		{"number too big", "jobs: {hello: {schedule: '@hourly', max_attempts: 99999999999999999999}}\n", 1, "jobs.hello.max_attempts", "(too big)"},
		{"number as list", "defaults:\n  max_attempts: [1]\n", 2, "defaults.max_attempts", "want a whole number, not a list"},
		{"settings as number", "defaults:\n  retries: 3\n", 2, "defaults.retries", `want a mapping of settings, not "3"`},
		{"settings as list", "defaults: [a]\n", 1, "defaults", "want a mapping of settings, not a list"},
		{"zone as list", "defaults:\n  timezone: [UTC]\n", 2, "defaults.timezone", "want a single value, not a list"},
		{"jobs as list", "jobs:\n  - hello\n", 2, "jobs", "want a mapping, not a list"},
		{"jobs as word", "jobs: hello\n", 1, "jobs", `want a mapping, not "hello"`},
		{"job as schedule", "jobs:\n  hello: '@hourly'\n", 2, "jobs.hello", `want the job's settings, such as {schedule: "@hourly"}`},
		{"job as list", "jobs:\n  hello:\n    - schedule: x\n", 3, "jobs.hello", "not a list"},
		{"schedule as list", "jobs:\n  hello:\n    schedule: [a]\n", 3, "jobs.hello.schedule", "want a single value, not a list"},
		{"schedule as mapping, flow", "jobs: {hello: {schedule: {a: b}}}\n", 1, "jobs.hello.schedule", "want a single value, not a mapping"},
		{"on_crash as list", "jobs:\n  hello:\n    schedule: '@hourly'\n    on_crash: [a]\n", 4, "jobs.hello.on_crash", "want a single value, not a list"},
		{"retries.max as word", "jobs:\n  hello:\n    schedule: '@hourly'\n    retries: {max: x}\n", 4, "jobs.hello.retries.max", `want a whole number, not "x"`},
		{"backoff as list", "jobs:\n  hello:\n    schedule: '@hourly'\n    retries:\n      backoff: [1s]\n", 5, "jobs.hello.retries.backoff", "not a list"},
		{"job name as list", "jobs:\n  [a]: {schedule: '@hourly'}\n", 2, "jobs", "a key must be a single value, not a list"},
		{"job name as mapping", "jobs:\n  ? {a: 1}\n  : {schedule: '@hourly'}\n", 2, "jobs", "a key must be a single value, not a mapping"},
		{"job named dot", "jobs:\n  hello: {schedule: '@hourly'}\n  '.': {schedule: '@hourly', run: hello}\n", 3, "jobs..", `job name "." cannot be opened from the dashboard`},
		{"job named dot dot", "jobs:\n  '..': {schedule: '@hourly', run: hello}\n", 2, "jobs...", `job name ".." cannot be opened from the dashboard`},
		{"duty as number", "duties:\n  owner: 5\n", 2, "duties.owner", `want a mapping of settings, not "5"`},
		{"duties as list", "duties: [owner]\n", 1, "duties", "want a mapping, not a list"},
		{"store block as word", "store:\n  sqlite: x\n", 2, "store.sqlite", `want a mapping of settings, not "x"`},
		{"store kind as list", "store:\n  kind: [a]\n", 2, "store.kind", "want a single value, not a list"},
		{"etcd endpoints as word", "store:\n  etcd:\n    endpoints: x\n", 3, "store.etcd.endpoints", `want a list, not "x"`},
		{"etcd max_txn_ops as word", "store:\n  etcd:\n    max_txn_ops: many\n", 3, "store.etcd.max_txn_ops", `want a whole number, not "many"`},
		{"etcd lease_ttl bad", "store:\n  etcd:\n    lease_ttl: 5x\n", 3, "store.etcd.lease_ttl", `invalid duration "5x"`},
		{"redis db as word", "store:\n  redis:\n    db: x\n", 3, "store.redis.db", `want a whole number, not "x"`},
		{"redis addrs as word", "store:\n  redis:\n    addrs: x\n", 3, "store.redis.addrs", `want a list, not "x"`},
		{"redis addrs nested", "store:\n  redis:\n    addrs: [[x]]\n", 3, "store.redis.addrs", "want a single value, not a list"},
		{"redis pool with a fraction", "store:\n  redis:\n    pool_size: 1.5\n", 3, "store.redis.pool_size", "want a whole number"},
		{"redis tls as list", "store:\n  redis:\n    tls: [x]\n", 3, "store.redis.tls", "want true, false or a mapping, not a list"},
		{"redis tls.enabled as word", "store:\n  redis:\n    tls: {enabled: maybe}\n", 3, "store.redis.tls.enabled", `want true or false, not "maybe"`},
		{"redis timeout as list", "store:\n  redis:\n    read_timeout: [x]\n", 3, "store.redis.read_timeout", "want a duration such as 15s, not a list"},
		{"postgres pool as word", "store:\n  postgres:\n    pool_size: x\n", 3, "store.postgres.pool_size", `want a whole number, not "x"`},
		{"http as word", "http: x\n", 1, "http", `want a mapping of settings, not "x"`},
		{"metrics flag as word", "metrics:\n  per_job_histograms: maybe\n", 2, "metrics.per_job_histograms", `want true or false, not "maybe"`},
		{"grace as list", "shutdown_grace: [x]\n", 1, "shutdown_grace", "want a duration such as 15s, not a list"},
		{"replica as mapping", "replica: {a: b}\n", 1, "replica", "want a single value, not a mapping"},
		{"file as list", "- a\n- b\n", 1, "", "the file must be a mapping of settings"},
		{"file as words", "just some words\n", 1, "", `the file must be a mapping of settings (store:, defaults:, jobs:, ...), not "just some words"`},
		// Keys set twice.
		{"key twice", "jobs:\n  hello:\n    schedule: '@hourly'\n    lease: 5s\n    lease: 6s\n", 5, "jobs.hello.lease", "set twice in one mapping: first at line 4"},
		{"key twice, flow", "jobs: {hello: {schedule: '@hourly', lease: 5s, lease: 6s}}\n", 1, "jobs.hello.lease", "set twice"},
		{"job twice", "jobs:\n  hello: {schedule: '@hourly'}\n  hello: {schedule: '@daily'}\n", 3, "jobs.hello", "set twice in one mapping: first at line 2"},
		{"section twice", "defaults:\n  lease: 15s\ndefaults:\n  lease: 16s\n", 3, "defaults", "set twice in one mapping: first at line 1"},
		// Syntax.
		{"unquoted @", "jobs:\n  hello:\n    schedule: @hourly\n", 3, "jobs.hello.schedule", `a value starting with @ must be quoted, such as "@hourly"`},
		{"unquoted @ with a variable", "jobs:\n  hello:\n    schedule: @every ${SLOTCRON_TEST_SET}s\n", 3, "jobs.hello.schedule",
			`a value starting with @ must be quoted, such as "@every ${SLOTCRON_TEST_SET}s"`},
		{"unquoted *", "jobs:\n  hello:\n    schedule: */5 * * * *\n", 3, "jobs.hello.schedule", `a value starting with * must be quoted, such as "*/5 * * * *"`},
		{"quote not closed", "jobs:\n  hello:\n    schedule: '@hourly\n", 3, "jobs.hello.schedule", "syntax error"},
		{"flow not closed", "jobs:\n  hello: {schedule: '@hourly'\n", 2, "jobs.hello", "syntax error"},
		{"flow not closed, CR line breaks", "jobs:\r  hello:\r    schedule: [a\r", 3, "jobs.hello.schedule", "syntax error"},
		{"indented too little", "jobs:\n  hello:\n    schedule: '@hourly'\n   timeout: 5s\n", 4, "jobs.hello.timeout", "syntax error"},
		{"colon in a value", "jobs:\n  hello:\n    schedule: '@hourly'\n    params:\n      note: a: b\n", 5, "jobs.hello.params.note", `": " inside a plain value`},
		{"bad escape", "jobs:\n  hello:\n    schedule: \"\\q\"\n", 3, "jobs.hello.schedule", "unknown escape"},
		{"alias of nothing", "jobs:\n  hello: &a {schedule: '@hourly'}\n  sleep: *b\n", 3, "jobs.sleep", "alias *b names no anchor &b"},
		// More than one document.
		{"second document", "jobs:\n  hello: {schedule: '@hourly'}\n---\njobs:\n  sleep: {schedule: '@hourly'}\n", 3, "", "a second YAML document starts here"},
		{"content after the end", "jobs:\n  hello: {schedule: '@hourly'}\n...\nfoo: 1\n", 3, "", "a second YAML document"},
		{"broken second document", "jobs:\n  hello: {schedule: '@hourly'}\n--- \n# more\nfoo: [\n", 3, "", "a second YAML document"},
		// Variables that are not set.
		{"unset variable", "http:\n  token: ${SLOTCRON_TEST_UNSET}\njobs:\n  hello: {schedule: '@hourly'}\n", 2, "http.token",
			"empty because ${SLOTCRON_TEST_UNSET} is not set in the environment (set it, or write ${SLOTCRON_TEST_UNSET:-} if empty is meant)"},
		{"two unset variables", "store:\n  redis:\n    addr: \"${SLOTCRON_TEST_UNSET}${SLOTCRON_TEST_UNSET_2}\"\n", 3, "store.redis.addr",
			"${SLOTCRON_TEST_UNSET} and ${SLOTCRON_TEST_UNSET_2} are not set"},
		{"unset variable in a list", "store:\n  redis:\n    addrs: [a, '${SLOTCRON_TEST_UNSET}']\n", 3, "store.redis.addrs", "${SLOTCRON_TEST_UNSET} is not set"},
		{"unset variable as key", "jobs:\n  ${SLOTCRON_TEST_UNSET}: {schedule: '@hourly'}\n", 2, "jobs.${SLOTCRON_TEST_UNSET}", "${SLOTCRON_TEST_UNSET} is not set"},
		{"unset variable in params", "jobs:\n  hello:\n    schedule: '@hourly'\n    params: {region: '${SLOTCRON_TEST_UNSET}'}\n", 4, "jobs.hello.params.region", "is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := parseAndValidateAs("broken.yaml", []byte(tc.doc))
			var errs ConfigErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v, want ConfigErrors", err)
			}
			found := false
			for _, e := range errs {
				if e.File != "broken.yaml" || e.Line < 1 {
					t.Errorf("%q names no file or line", e)
				}
				if m := goOrTag.FindString(e.Error()); m != "" {
					t.Errorf("%q shows %q", e, m)
				}
				found = found || e.Line == tc.line && e.Key == tc.key && strings.Contains(e.Msg, tc.msg)
			}
			if !found {
				t.Errorf("got:\n%v\nwant broken.yaml:%d: %s: ...%s...", err, tc.line, tc.key, tc.msg)
			}
		})
	}
}

// What a variable may leave empty: a variable set to the empty string, and
// ${VAR:-}, are taken as meant; so is an unset variable beside other text.
func TestEnvEmptyOnPurpose(t *testing.T) {
	t.Setenv("SLOTCRON_TEST_EMPTY", "")
	doc := "replica: ${SLOTCRON_TEST_EMPTY}\n" +
		"http: {listen: '${SLOTCRON_TEST_UNSET:-}', token: 'x${SLOTCRON_TEST_UNSET}'}\n" +
		"log: {level: '${SLOTCRON_TEST_UNSET:-warn}'}\n" +
		"jobs: {hello: {schedule: '@hourly'}}\n"
	cfg, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replica != "" || cfg.HTTP.Listen != "" || cfg.HTTP.Token != "x" || cfg.Log.Level != "warn" {
		t.Errorf("expanded to %+v %+v %+v", cfg.Replica, cfg.HTTP, cfg.Log)
	}
}

// An empty file, or one without jobs and duties, loads and validates, with
// a warning; a file with either has none.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"", "test.yaml: the file is empty: no jobs and no duties, so a replica runs nothing"},
		{"# nothing yet\n", "test.yaml: the file is empty"},
		{"store: {kind: memory}\n", "test.yaml: no jobs and no duties: a replica runs nothing"},
		{"store: {kind: memory}\njobs:\n", "test.yaml:2: jobs: no jobs and no duties"},
		{"duties: {}\n", "test.yaml:1: duties: no jobs and no duties"},
		{"jobs: {hello: {schedule: '@hourly'}}\n", ""},
		{"duties: {owner: {}}\n", ""},
	} {
		cfg, err := Parse("test.yaml", []byte(tc.doc))
		if err == nil {
			err = cfg.Validate(demoRegistry())
		}
		if err != nil {
			t.Errorf("%q: %v", tc.doc, err)
			continue
		}
		ws := cfg.Warnings()
		if tc.want == "" {
			if len(ws) != 0 {
				t.Errorf("%q: warnings %v, want none", tc.doc, ws)
			}
			continue
		}
		if len(ws) != 1 || !strings.HasPrefix(ws[0].Error(), tc.want) {
			t.Errorf("%q: warnings %v, want %q", tc.doc, ws, tc.want)
		}
	}
	if ws := (&Config{}).Warnings(); len(ws) != 1 || ws[0].Error() != "no jobs and no duties: a replica runs nothing" {
		t.Errorf("a Config built in code: %v", ws)
	}
}

// parseAndValidateAs is what `scheduler validate` does with a document.
func parseAndValidateAs(name string, doc []byte) error {
	cfg, err := Parse(name, doc)
	if err != nil {
		return err
	}
	return cfg.Validate(demoRegistry())
}
