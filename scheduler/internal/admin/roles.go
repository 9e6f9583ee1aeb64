package admin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Role is what a token lets its caller do; each role may do everything the
// roles below it may.
type Role uint8

const (
	// RoleNone is an anonymous caller: the reads, when read_auth is off.
	RoleNone Role = iota
	// RoleReader reads: every GET of the API, /metrics, the dashboard.
	RoleReader
	// RoleOperator acts on jobs and schedules: trigger, backfill, pause
	// and resume a job or a schedule.
	RoleOperator
	// RoleAdmin does everything: pause and resume the cluster, create,
	// replace and delete schedules.
	RoleAdmin
)

var roleNames = [...]string{"", "reader", "operator", "admin"}

// String is the role's name in the configuration: reader, operator, admin;
// "" for RoleNone.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// ParseRole reads a role's name: reader, operator or admin.
func ParseRole(s string) (Role, bool) {
	for i, n := range roleNames[1:] {
		if n == s {
			return Role(i + 1), true
		}
	}
	return RoleNone, false
}

// TokenSource is one configured token: the name its callers go by, its
// role, and where its text is: a file, an environment variable, or Value,
// written in the configuration itself (http.token). Exactly one of File,
// Env and Value is set.
type TokenSource struct {
	Name  string
	Role  Role
	File  string
	Env   string
	Value string
}

// maxTokenFile bounds a token file: a token is short, and a file bigger
// than this is not a token file.
const maxTokenFile = 64 << 10

// ErrEmptyToken is ReadTokens' error for a source with no token in it.
var ErrEmptyToken = errors.New("the token is empty")

// ReadTokens reads the token texts of src. A file holds one token a line,
// each trimmed of spaces, blank lines left out: one token, or two during a
// rotation (the new beside the old). An environment variable holds one
// token, trimmed. A file that cannot be read, and a source with no token,
// are errors; an error never quotes a token.
func ReadTokens(src TokenSource) ([]string, error) {
	var text string
	switch {
	case src.File != "":
		f, err := os.Open(src.File)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", src.File, err)
		}
		if len(b) > maxTokenFile {
			return nil, fmt.Errorf("%s: longer than %d KiB, not a token file", src.File, maxTokenFile>>10)
		}
		text = strings.TrimPrefix(string(b), "\ufeff") // a byte-order mark some editors write
	case src.Env != "":
		v, ok := os.LookupEnv(src.Env)
		if !ok {
			return nil, fmt.Errorf("environment variable %s is not set", src.Env)
		}
		text = strings.TrimSpace(v)
		if strings.ContainsAny(text, "\r\n") {
			return nil, fmt.Errorf("environment variable %s: a token is one line", src.Env)
		}
	default:
		text = src.Value
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, ErrEmptyToken
	}
	return out, nil
}
