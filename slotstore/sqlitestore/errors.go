package sqlitestore

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// ErrBusy reports that the database file's lock stayed held by another
// connection or process for longer than the busy timeout. The call changed
// nothing; it may be retried.
var ErrBusy = errors.New("sqlitestore: database busy")

// Primary SQLite result codes; the driver reports extended codes, whose low
// byte is the primary one.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// fail wraps err, the failure of op, in the error callers test for:
// ErrClosed after Close, ErrBusy for a lock that was not released in time.
func (s *Store) fail(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, slotstore.ErrClosed, err)
	}
	if isBusy(err) {
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, ErrBusy, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// failSent is fail for a write whose statement may have reached the file: a
// done context may have stopped it before or after it took effect, so the
// outcome is unknown. A busy lock means it never ran.
func (s *Store) failSent(ctx context.Context, op string, err error) error {
	if ctx.Err() == nil || isBusy(err) || s.closed.Load() {
		return s.fail(op, err)
	}
	if !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return rules.OutcomeUnknown("sqlitestore "+op, err)
}

func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqliteBusy || code == sqliteLocked
}
