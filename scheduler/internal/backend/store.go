// Package backend builds what the engine runs on from the configuration:
// the slot store of the configured kind, and the elector the duties
// campaign with, which follows the store in use. It holds the registry of
// store kinds (kinds.go): sqlite and memory register themselves here
// (builtin.go), every other kind through package storekind, from the
// package whose import links it. It is the one place that maps store.kind
// to a backend.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// Config is the store block of the configuration, checked.
type Config struct {
	// Kind names a registered kind; empty is sqlite.
	Kind string
	// Options is a value of the kind's Options type, or nil for its zero
	// value.
	Options any
}

// Open opens the store c describes, with its registered kind.
func Open(ctx context.Context, c Config) (slotstore.Store, error) {
	k, ok := Lookup(c.Kind)
	if !ok {
		if imp := ImportFor(c.Kind); imp != "" {
			return nil, fmt.Errorf("store kind %q is not linked into this binary: import _ %q", c.Kind, imp)
		}
		return nil, fmt.Errorf("unknown store kind %q", c.Kind)
	}
	opts, err := k.Value(c.Options)
	if err != nil {
		return nil, err
	}
	s, err := k.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s store: %w", k.Name, err) // each backend keeps passwords out of its errors
	}
	return s, nil
}

// OpenLogged is Open, with what the kind's client library logs on its own
// (go-redis dialling, say) sent through log from the first dial on, as
// OpenWait does: for the calls that open a store once, outside Run.
func OpenLogged(ctx context.Context, c Config, log *slog.Logger) (slotstore.Store, error) {
	routeLogs(c, log)
	return Open(ctx, c)
}

// routeLogs sends what the client library of c's kind logs on its own
// through log, before any store of the kind exists.
func routeLogs(c Config, log *slog.Logger) {
	if k, ok := Lookup(c.Kind); ok && k.RouteLogs != nil {
		k.RouteLogs(nil, log)
	}
}

// OpenWait opens the store c describes, retrying for up to wait with a
// backoff from 250 ms to 5 s while the store cannot be reached, and logging
// each failure. Any other error (a bad option, a refused login, a missing
// directory) is returned at once: waiting would not mend it.
//
// What the kind's client library logs on its own while dialling goes
// through log too, from the first try: a library that logs to standard
// error would otherwise break a log of one JSON object a line.
func OpenWait(ctx context.Context, c Config, wait time.Duration, log *slog.Logger) (slotstore.Store, error) {
	routeLogs(c, log)
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pause := 250 * time.Millisecond
	for try := 1; ; try++ {
		st, err := Open(octx, c)
		if err == nil || !Unreachable(err) || octx.Err() != nil {
			if err != nil && ctx.Err() == nil && octx.Err() != nil {
				err = fmt.Errorf("%w (gave up after %v)", err, wait)
			}
			return st, err
		}
		log.Warn("opening the store failed; retrying", "err", err, "try", try, "in", pause)
		select {
		case <-octx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// Unreachable reports whether err says the store could not be reached, or
// was not ready to serve: a refused or broken connection, a timeout, or
// what a registered kind knows to mean the same (a server starting up or
// shutting down).
func Unreachable(err error) bool {
	for _, k := range Kinds() {
		if k.Unreachable != nil && k.Unreachable(err) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, context.DeadlineExceeded)
}
