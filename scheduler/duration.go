package scheduler

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as "15s", "10m" or "168h".
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a duration string. A bad value is reported as a
// *yaml.TypeError so decoding goes on and every error is reported together.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		// In go-yaml's words, which the loader puts into the file's.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: cannot unmarshal %s into %T", n.Line, n.ShortTag(), *d)}}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil && !strings.HasPrefix(n.Value, "-") && durationSyntax.MatchString(strings.TrimPrefix(n.Value, "+")) {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: duration %q is too long (the longest allowed is %v)", n.Line, n.Value, MaxDuration)}}
	}
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: invalid duration %q (use a number with a unit: 500ms, 15s, 10m, 168h)", n.Line, n.Value)}}
	}
	if v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: negative duration %q", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// durationSyntax matches what time.ParseDuration reads, whatever the size:
// a value it matches but ParseDuration refuses does not fit in int64 ns.
var durationSyntax = regexp.MustCompile(`^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
