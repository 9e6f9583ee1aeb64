package scheduler

import (
	"strings"
	"testing"
)

// A duration written as a bare number with a fraction is one problem, said
// once: a duration wants a unit, and is not a whole number setting.
func TestFractionalDurationIsOneProblem(t *testing.T) {
	_, err := Parse("f.yaml", []byte("jobs:\n  hello:\n    schedule: '@hourly'\n    jitter: 1.5\n"))
	if err == nil {
		t.Fatal("jitter: 1.5 was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `f.yaml:4: jobs.hello.jitter: invalid duration "1.5"`) || strings.Contains(msg, "whole number") {
		t.Errorf("jitter: 1.5: %s", msg)
	}
}
