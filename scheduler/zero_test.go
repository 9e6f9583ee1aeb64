package scheduler

import (
	"strings"
	"testing"
	"time"
)

// jitter: 0s and retries.backoff: 0s mean none, even over defaults.
func TestZeroPlainMeaning(t *testing.T) {
	doc := "defaults: {jitter: 20s, retries: {max: 2, backoff: 5s}}\n" +
		"jobs:\n  plain: {schedule: '@hourly', run: hello, jitter: 0s, retries: {backoff: 0s}}\n  inherits: {schedule: '@hourly', run: hello}\n"
	cfg, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	plans, _, err := cfg.resolve(demoRegistry())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]time.Duration{}
	for _, p := range plans {
		got[p.Name] = [2]time.Duration{p.Jitter, p.Retries.Backoff}
	}
	if g := got["plain"]; g != [2]time.Duration{0, 0} {
		t.Errorf("plain: jitter and backoff %v, want 0 and 0", g)
	}
	if g := got["inherits"]; g[1] != 5*time.Second || g[0] == 0 {
		t.Errorf("inherits: jitter and backoff %v, want defaults' (some jitter, 5s)", g)
	}
}

// A problem of defaults is said once, at defaults, however many jobs
// inherit it.
func TestDefaultsProblemOnce(t *testing.T) {
	doc := "defaults:\n  history: 10s\n  jitter: 2m\njobs:\n  a: {schedule: '@hourly', run: hello}\n  b: {schedule: '@hourly', run: hello}\n  c: {schedule: '@hourly', run: hello}\n"
	cfg, err := Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate(demoRegistry())
	var errs ConfigErrors
	if !asConfigErrors(err, &errs) {
		t.Fatalf("error %v, want ConfigErrors", err)
	}
	want := []string{
		"test.yaml:2: defaults.history: history 10s is shorter than starting_deadline + lease (1m15s)",
		"test.yaml:3: defaults.jitter: jitter 2m0s must be shorter than starting_deadline 1m0s",
	}
	if len(errs) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("problem %d: %v, want %q", i+1, errs[i], w)
		}
	}
	// A job that sets one of the keys has the problem at its own key.
	cfg, err = Parse("test.yaml", []byte(doc+"  d: {schedule: '@hourly', run: hello, starting_deadline: 30s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(demoRegistry()); err == nil || !strings.Contains(err.Error(), "test.yaml:8: jobs.d.starting_deadline: jitter 2m0s must be shorter than starting_deadline 30s") {
		t.Errorf("error %v, want one at jobs.d.starting_deadline", err)
	}
}

func asConfigErrors(err error, out *ConfigErrors) bool {
	es, ok := err.(ConfigErrors)
	*out = es
	return ok
}
