package sqlitestore

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/slotcron/slotcron/internal/optkey"
)

const (
	// DefaultPath is the database file Open uses when Options.Path is
	// empty, in the working directory.
	DefaultPath = "slotcron.db"
	// DefaultBusyTimeout is how long a call waits for another connection or
	// process to release the database file's write lock when
	// Options.BusyTimeout is zero.
	DefaultBusyTimeout = 5 * time.Second
	// MaxBusyTimeout is the longest Options.BusyTimeout: SQLite holds it
	// in milliseconds in a 32-bit integer, about 24 days and 20 hours.
	MaxBusyTimeout = math.MaxInt32 * time.Millisecond
)

// Options configures Open. The zero value of every field means its
// default. Path and BusyTimeout are the store.sqlite block of the YAML
// configuration: each tag is the key there, and Validate names the keys of
// the settings it refuses. Clock is for code only.
type Options struct {
	// Path is the database file, shared by every replica on the host. It
	// must name a file: not ":memory:", a "file:" URI or a path with a
	// query. Empty means DefaultPath.
	Path string `yaml:"path"`
	// BusyTimeout is how long a call waits for the file's write lock held
	// by another connection or process before failing with ErrBusy, at
	// most MaxBusyTimeout. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration `yaml:"busy_timeout"`
	// Clock replaces time.Now as the store's clock; nil means time.Now.
	// Every process sharing a file must use the same clock: lease expiry
	// compares times written by one process with the clock of another.
	Clock func() time.Time `yaml:"-"`
}

// Validate reports every setting of o that Open would refuse before it
// opens the file, as errors.Join of errors each naming the setting's YAML
// key ("path: ...", "busy_timeout: ..."). It returns nil when Open may try
// o; whether the file can be opened is Open's to find out.
func (o Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, optkey.Errorf(key, format, args...)) }
	if p := o.Path; p == ":memory:" || strings.HasPrefix(p, "file:") || strings.Contains(p, "?") {
		bad("path", "%q: want the path of a file, not an in-memory database, a URI or a query", p)
	}
	switch {
	case o.BusyTimeout < 0:
		bad("busy_timeout", "must not be negative")
	case o.BusyTimeout > MaxBusyTimeout:
		bad("busy_timeout", "%v is longer than %v, the longest SQLite accepts", o.BusyTimeout, MaxBusyTimeout)
	}
	return errors.Join(errs...)
}

// withDefaults returns o, which Validate accepted, with every zero setting
// replaced by its default.
func (o Options) withDefaults() Options {
	if o.Path == "" {
		o.Path = DefaultPath
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}
