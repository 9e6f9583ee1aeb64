package schedule

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched, with errors.Is, by every error Parse returns.
var ErrInvalid = errors.New("schedule: invalid schedule")

// parseError says which spec was refused and why. Its message names the part
// that is wrong; its cause, if any, stays reachable through errors.Unwrap.
type parseError struct {
	spec  string
	msg   string
	cause error
}

// invalid returns a parseError for spec, the message formatted from format
// and args.
func invalid(spec string, cause error, format string, args ...any) error {
	return &parseError{spec: spec, msg: fmt.Sprintf(format, args...), cause: cause}
}

func (e *parseError) Error() string { return fmt.Sprintf("bad spec %q: %s", e.spec, e.msg) }

func (e *parseError) Unwrap() error { return e.cause }

func (e *parseError) Is(target error) bool { return target == ErrInvalid }
