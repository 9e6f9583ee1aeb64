package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"go.yaml.in/yaml/v3"
)

// specParams returns the params hash of job ledger's spec in doc, and the
// params its runs get.
func specParams(t *testing.T, doc string) (hash, params string) {
	t.Helper()
	cfg, err := Parse("slotcron.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := cfg.resolve(demoRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.Name == "ledger" {
			b, _ := engine.ParseBody(engine.SpecOf(j, 0).Body)
			return b.Params, string(j.Params)
		}
	}
	t.Fatal("no job ledger")
	return "", ""
}

// The catalog's spec hashes a job's params as the file wrote them: a secret
// in a ${VAR} never reaches the store, even hashed (a guess of it could be
// checked against an unsalted hash), and rotating it changes no spec; the
// job's runs get the value. A change of the written params changes the
// spec.
func TestSpecHashesParamsAsWritten(t *testing.T) {
	const doc = "jobs:\n  ledger: {run: hello, schedule: \"@every 10s\", params: {dsn: \"${LEDGER_DSN}\", batch: 5}}\n"
	t.Setenv("LEDGER_DSN", "postgres://app:hunter2@db/ledger")
	hash, params := specParams(t, doc)
	if !strings.Contains(params, "hunter2") {
		t.Errorf("the job's params %q lack the variable's value", params)
	}
	for _, text := range []string{params, "{dsn: \"postgres://app:hunter2@db/ledger\", batch: 5}\n"} {
		if sum := sha256.Sum256([]byte(text)); hex.EncodeToString(sum[:]) == hash {
			t.Errorf("the spec's params hash is the hash of %q", text)
		}
	}
	t.Setenv("LEDGER_DSN", "postgres://app:rotated@db/ledger")
	if again, _ := specParams(t, doc); again != hash {
		t.Errorf("rotating the secret changed the spec's params hash: %s, then %s", hash, again)
	}
	if other, _ := specParams(t, strings.Replace(doc, "batch: 5", "batch: 6", 1)); other == hash || other == "" {
		t.Errorf("a change of the written params left the hash %s", other)
	}
}

// However the file reaches a job's params — a merge key, an alias of the
// job or of its params, a scalar, a job named by a variable, a value that
// needs quoting — the spec hashes them as written: not the expanded text,
// and the same after the secret rotates. An alias gives the job what its
// anchor holds.
func TestSpecHashesParamsAsWrittenEveryWay(t *testing.T) {
	const other = "  other: &b {run: hello, schedule: \"@every 10s\", params: &p {dsn: \"${LEDGER_DSN}\"}}\n"
	t.Setenv("JOB_NAME", "ledger")
	for name, doc := range map[string]string{
		"merge key":               other + "  ledger:\n    <<: *b\n",
		"job alias":               other + "  ledger: *b\n",
		"params alias":            other + "  ledger: {run: hello, schedule: \"@every 10s\", params: *p}\n",
		"scalar":                  "  ledger: {run: hello, schedule: \"@every 10s\", params: \"${LEDGER_DSN}\"}\n",
		"named by a variable":     "  ${JOB_NAME}: {run: hello, schedule: \"@every 10s\", params: {dsn: \"${LEDGER_DSN}\"}}\n",
		"plain, quoted on output": "  ledger: {run: hello, schedule: \"@every 10s\", params: {dsn: ${LEDGER_DSN}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			doc := "jobs:\n" + doc
			t.Setenv("LEDGER_DSN", "pa\"ss: #hunter2\\")
			hash, params := specParams(t, doc)
			if !strings.Contains(params, "hunter2") {
				t.Errorf("the job's params %q lack the variable's value", params)
			}
			if sum := sha256.Sum256([]byte(params)); hex.EncodeToString(sum[:]) == hash {
				t.Errorf("the spec hashes the expanded params %q", params)
			}
			t.Setenv("LEDGER_DSN", "rotated")
			if again, _ := specParams(t, doc); again != hash {
				t.Errorf("rotating the secret changed the spec's params hash")
			}
		})
	}
}

// A program that changes a parsed file's job params (Config.Jobs) gets a
// spec of the params it set, not of the file's.
func TestSpecHashesParamsChangedInCode(t *testing.T) {
	t.Setenv("LEDGER_BATCH", "5")
	cfg, err := Parse("slotcron.yaml", []byte("jobs:\n  ledger: {run: hello, schedule: \"@every 10s\", params: {batch: \"${LEDGER_BATCH}\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	hash := func() string {
		js, _, err := cfg.resolve(demoRegistry())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := engine.ParseBody(engine.SpecOf(js[0], 0).Body)
		return b.Params
	}
	before := hash()
	jc := cfg.Jobs["ledger"]
	if err := yaml.Unmarshal([]byte("{batch: 6}"), &jc.Params); err != nil {
		t.Fatal(err)
	}
	cfg.Jobs["ledger"] = jc
	if after := hash(); after == before {
		t.Errorf("params changed in code kept the spec's params hash %s", before)
	}
}
