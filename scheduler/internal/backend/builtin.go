package backend

import (
	"context"
	"fmt"
	"reflect"

	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
	"github.com/slotcron/slotcron/slotstore/sqlitestore"
)

// The kinds every binary that imports package scheduler links: sqlite, the
// embedded default, and memory. Both are pure Go and elect duties in the
// slot store itself.
func init() {
	Register(Kind{
		Name:    "sqlite",
		Options: reflect.TypeFor[sqlitestore.Options](),
		Check:   func(opts any) error { return opts.(sqlitestore.Options).Validate() },
		Open: func(ctx context.Context, opts any) (slotstore.Store, error) {
			o := opts.(sqlitestore.Options)
			s, err := sqlitestore.Open(ctx, o)
			if err != nil {
				path := o.Path
				if path == "" {
					path = sqlitestore.DefaultPath
				}
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return s, nil
		},
	})
	Register(Kind{
		Name: "memory",
		Open: func(context.Context, any) (slotstore.Store, error) {
			return memstore.New(memstore.Options{}), nil
		},
	})
}
