package scheduler

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// A duration key left out means its default; a duration written as 0 is
// never silently read as that default. Where 0 has a plain meaning it gets
// it, even over a value set in defaults: jitter: 0s is no jitter,
// retries.backoff: 0s retries at once. Everywhere else 0 is refused, with
// the reason, at its key. (A Config built in Go has no "written": there a
// zero field means the default, as documented on each field.)

// zeroRefused maps each duration key of a policy where 0 is refused to why.
var zeroRefused = map[string]string{
	"lease":             "a lease of 0s would end before the job began; give at least 1s, or leave lease out for the default 15s",
	"timeout":           "a timeout of 0s would end every run as it starts; leave timeout out for the default 10m",
	"starting_deadline": "a starting_deadline of 0s would miss every slot (no replica starts one at its very instant); leave it out for the default 1m",
	"history":           "a history of 0s would forget a slot while it may still be claimed; leave it out for the default 168h",
	"max_backoff":       "a retries.max_backoff of 0s would cap every wait at nothing; write retries.backoff: 0s to retry at once, or leave max_backoff out for the default 1m",
}

// zeroGrace is why shutdown_grace: 0s is refused.
const zeroGrace = "a shutdown_grace of 0s would cancel running jobs the moment SIGTERM comes; give the time they may take to finish, or leave it out for the default 25s"

// zeroActions is why actions_history: 0s is refused.
const zeroActions = "an actions_history of 0s would forget each action as it is recorded; leave it out for the default 2160h (90 days)"

// zeroDutyLease is why a duty's lease: 0s is refused.
const zeroDutyLease = "a lease of 0s would end before the duty began; give at least 1s, or leave lease out for the default 15s"

// zeroDurations reports every duration written as 0 where 0 is refused:
// shutdown_grace, actions_history, the policies of defaults and of each job, and each
// duty's lease.
func (s *source) zeroDurations() ConfigErrors {
	if len(s.root.Content) == 0 {
		return nil
	}
	var errs ConfigErrors
	report := func(k, v *yaml.Node, key, why string) {
		if isZeroDuration(v) {
			errs = append(errs, &ConfigError{File: s.file, Line: k.Line, Key: key, Msg: why})
		}
	}
	policy := func(m *yaml.Node, path string) {
		eachEntry(m, func(k, v *yaml.Node) {
			if k.Value == "retries" {
				eachEntry(v, func(k, v *yaml.Node) {
					if k.Value == "max_backoff" {
						report(k, v, path+".retries.max_backoff", zeroRefused["max_backoff"])
					}
				})
			} else if why, ok := zeroRefused[k.Value]; ok && k.Value != "max_backoff" {
				report(k, v, path+"."+k.Value, why)
			}
		})
	}
	eachEntry(s.root.Content[0], func(k, v *yaml.Node) {
		switch k.Value {
		case "shutdown_grace":
			report(k, v, "shutdown_grace", zeroGrace)
		case "actions_history":
			report(k, v, "actions_history", zeroActions)
		case "defaults":
			policy(v, "defaults")
		case "jobs":
			eachEntry(v, func(name, job *yaml.Node) { policy(job, "jobs."+name.Value) })
		case "duties":
			eachEntry(v, func(name, duty *yaml.Node) {
				eachEntry(duty, func(k, v *yaml.Node) {
					if k.Value == "lease" {
						report(k, v, "duties."+name.Value+".lease", zeroDutyLease)
					}
				})
			})
		}
	})
	return errs
}

// writtenZero reports whether the document writes the duration at path as
// 0, so that it keeps its plain meaning instead of inheriting.
func (s *source) writtenZero(path ...string) bool {
	_, n := s.lookup(path...)
	return n != nil && isZeroDuration(n)
}

// keepZeros gives jitter and retries.backoff written as 0 at path their
// plain meaning in pol, which merging replaced with what they inherit.
func (c *Config) keepZeros(pol *Policy, path ...string) {
	if c.src == nil {
		return // built in code: a zero is a zero
	}
	at := func(keys ...string) []string { return append(append([]string{}, path...), keys...) }
	if pol.Jitter != 0 && c.src.writtenZero(at("jitter")...) {
		pol.Jitter = 0
	}
	if pol.Retries.Backoff != 0 && c.src.writtenZero(at("retries", "backoff")...) {
		pol.Retries.Backoff = 0
	}
}

// eachEntry calls fn with each key and value of mapping n (through an
// alias); nothing for another kind of node.
func eachEntry(n *yaml.Node, fn func(k, v *yaml.Node)) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		fn(n.Content[i], n.Content[i+1])
	}
}

// isZeroDuration reports whether n is a duration that parses to 0.
func isZeroDuration(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return false
	}
	d, err := time.ParseDuration(n.Value)
	return err == nil && d == 0
}

// defaultsOnly is s with only the document's defaults, all a schedule held
// as data reads of it (keepZeros); nil for none.
func (s *source) defaultsOnly() *source {
	_, d := s.lookup("defaults")
	if d == nil {
		return nil
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Value: "defaults"}
	root := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{key, d}}}}
	return &source{file: s.file, root: root}
}
