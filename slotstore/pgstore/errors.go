package pgstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/internal/rules"
)

// fail wraps err, the failure of op after its request may have been sent,
// in the error callers test for:
//
//   - after Close, an error wrapping slotstore.ErrClosed as well;
//   - when pgconn.SafeToRetry says nothing reached the server, or the
//     server answered with an error that is not FATAL (the statement, and
//     the implicit transaction around it, rolled back), a plain error;
//   - otherwise, a timeout, a cancelled context or a lost connection after
//     the request left, an error wrapping slotstore.ErrOutcomeUnknown: the
//     statement may have committed.
func (s *Store) fail(op string, err error) error {
	err = scrub(err, s.secrets)
	sure := definite(err)
	if s.closed.Load() {
		err = fmt.Errorf("%w: %w", slotstore.ErrClosed, err)
	}
	if sure {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return rules.OutcomeUnknown("pgstore "+op, err)
}

// definite reports whether err leaves no doubt that the statement did not
// take effect.
func definite(err error) bool {
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// FATAL and PANIC end the session; whether a commit happened
		// before is not certain from the client's side.
		sev := pgErr.SeverityUnlocalized
		if sev == "" {
			sev = pgErr.Severity
		}
		return sev != "FATAL" && sev != "PANIC"
	}
	return false
}

// scrub replaces every secret in err's message with a placeholder. The
// returned error unwraps to err, so errors.Is and errors.As still see its
// causes.
func scrub(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	clean := msg
	for _, sec := range secrets {
		clean = strings.ReplaceAll(clean, sec, redacted)
	}
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
