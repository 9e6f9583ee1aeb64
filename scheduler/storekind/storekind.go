// Package storekind registers the slot store kinds a binary supports, the
// way database/sql drivers and image formats register: a binary links the
// kinds it imports, and pays for no other.
//
// Package scheduler links sqlite (the embedded default) and memory itself.
// Each other kind slotcron ships has a package whose import links it:
//
//	import _ "github.com/slotcron/slotcron/scheduler/postgres" // store.kind: postgres
//	import _ "github.com/slotcron/slotcron/scheduler/redis"    // store.kind: redis
//	import _ "github.com/slotcron/slotcron/scheduler/etcd"     // store.kind: etcd
//
// A configuration naming a kind the binary does not link is an error at
// store.kind that names the import to add. Those packages call Register
// from their init functions; so may a package of yours, for a store of
// your own.
package storekind

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/slotstore"
)

// Kind is one kind of slot store: its Options, of type O, which are its
// block of the YAML configuration (store.<name>, decoded field for key by
// their yaml tags), and its store, of type S. Only Open is required.
type Kind[O any, S slotstore.Store] struct {
	// Open opens a store that makes and owns its connections, such as
	// pgstore.Open. The scheduler closes it when Run returns.
	Open func(ctx context.Context, opts O) (S, error)
	// Check reports what in opts the configuration gets wrong, before
	// anything opens, each problem at its key below store.<name> where the
	// error says it as slotcron's own backends' Validate do (an error of
	// another kind goes to the block as a whole); errors.Join several.
	// Nil means opts.Validate(), if O has that method.
	Check func(opts O) error
	// CheckLease reports, as Check does, what in opts does not fit
	// shortest, the shortest lease of any job or duty, which holder names
	// ("job invoices"). Nil checks nothing.
	CheckLease func(opts O, shortest time.Duration, holder string) error
	// Elector returns the elector duties campaign with on st, however st
	// was made (by Open, or by the caller and handed to the scheduler).
	// Nil means duties elect in the slot store itself, by polling.
	Elector func(ctx context.Context, st S, log *slog.Logger) (leader.Elector, error)
	// Unreachable reports whether an error of Open says the store could
	// not be reached or is not ready yet (starting up), so that a replica
	// retries for a while; refused connections and timeouts already count.
	// Nil adds nothing.
	Unreachable func(err error) bool
	// RouteLogs sends what st's client library logs on its own through
	// log. It is called with the zero S too, before Open, so that what the
	// library logs while dialling is routed as well. Nil when the library
	// logs nothing by itself.
	RouteLogs func(st S, log *slog.Logger)
}

// Register makes the store kind k available under name to every
// configuration of the binary: store.kind: name selects it, and the
// store.<name> block configures it. Call it from an init function. It
// panics if name is empty or taken, or k.Open is nil.
func Register[O any, S slotstore.Store](name string, k Kind[O, S]) {
	if t := reflect.TypeFor[O](); t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("slotcron: store kind %q registered with options of type %v: Options must be a struct, the YAML block's", name, t))
	}
	e := backend.Kind{
		Name:    name,
		Options: reflect.TypeFor[O](),
		Check:   func(opts any) error { return check(k, opts.(O)) },
	}
	if k.Open != nil {
		e.Open = func(ctx context.Context, opts any) (slotstore.Store, error) {
			s, err := k.Open(ctx, opts.(O))
			if err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	if k.CheckLease != nil {
		e.CheckLease = func(opts any, shortest time.Duration, holder string) error {
			return k.CheckLease(opts.(O), shortest, holder)
		}
	}
	if k.Elector != nil {
		e.Store = reflect.TypeFor[S]()
		e.Elector = func(ctx context.Context, st slotstore.Store, log *slog.Logger) (leader.Elector, bool, error) {
			s, ok := st.(S)
			if !ok {
				return nil, false, nil
			}
			el, err := k.Elector(ctx, s, log)
			return el, err == nil, err
		}
	}
	e.Unreachable = k.Unreachable
	if k.RouteLogs != nil {
		e.RouteLogs = func(st slotstore.Store, log *slog.Logger) {
			if s, ok := st.(S); ok || st == nil {
				k.RouteLogs(s, log)
			}
		}
	}
	backend.Register(e)
}

// check is k.Check, or else opts' own Validate.
func check[O any, S slotstore.Store](k Kind[O, S], opts O) error {
	if k.Check != nil {
		return k.Check(opts)
	}
	if v, ok := any(opts).(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
