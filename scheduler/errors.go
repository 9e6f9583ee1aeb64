package scheduler

import (
	"errors"
	"fmt"
	"strings"
)

// ConfigError is one problem found in a configuration, with its position.
type ConfigError struct {
	File string // empty for a Config built in code
	Line int    // 1-based; 0 when unknown
	Key  string // dotted path such as jobs.invoices.schedule
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors is every problem found in one configuration, in file order.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem, so errors.As finds a *ConfigError in them.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// IsConfigError reports whether err is a configuration problem (exit code 2)
// rather than a runtime failure.
func IsConfigError(err error) bool {
	var one *ConfigError
	var many ConfigErrors
	return errors.As(err, &many) || errors.As(err, &one)
}
