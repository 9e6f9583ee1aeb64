// Package postgres links the postgres store kind into a binary:
// store.kind: postgres keeps slots in PostgreSQL (package
// slotstore/pgstore), and duties elect with package leader/pgleader.
// Import it for its side effect:
//
//	import _ "github.com/slotcron/slotcron/scheduler/postgres"
//
// It registers the kind with package storekind. The store.postgres block
// of the configuration is pgstore.Options; in Go, set Config.Store to
// StoreConfig{Kind: "postgres", Options: pgstore.Options{...}}. A store
// made with pgstore.New on a pool of yours, handed to the scheduler with
// WithStore, elects with the same elector.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/pgleader"
	"github.com/slotcron/slotcron/scheduler/storekind"
	"github.com/slotcron/slotcron/slotstore/pgstore"
)

func init() {
	storekind.Register("postgres", storekind.Kind[pgstore.Options, *pgstore.Store]{
		Open:  pgstore.Open,
		Check: check,
		// Duties hold a session advisory lock on a dedicated connection,
		// made with the settings the store's pool connects with, plus a
		// lease row; followers are woken by NOTIFY.
		Elector: func(ctx context.Context, st *pgstore.Store, log *slog.Logger) (leader.Elector, error) {
			el, err := pgleader.New(ctx, pgleader.Options{ConnConfig: st.Pool().Config().ConnConfig, Schema: st.Schema(), Logger: log})
			if err != nil {
				return nil, fmt.Errorf("duties: %w", err)
			}
			return el, nil
		},
		// The server is starting up, or shutting down for a restart.
		Unreachable: func(err error) bool {
			var pgErr *pgconn.PgError
			return errors.As(err, &pgErr) && (pgErr.Code == "57P03" || pgErr.Code == "57P01")
		},
	})
}

// check is Options.Validate, but for an empty DSN, which it words with a
// hint: a file that chose postgres and names no database most likely left
// a ${VAR} unset.
func check(o pgstore.Options) error {
	if o.DSN != "" {
		return o.Validate()
	}
	errs := []error{optkey.Errorf("dsn", "store.kind is postgres but store.postgres.dsn is empty (is its ${VAR} set?)")}
	for _, e := range optkey.All(o.Validate()) {
		if !slices.Equal(e.Key, []string{"dsn"}) {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
