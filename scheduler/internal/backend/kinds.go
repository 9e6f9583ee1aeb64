package backend

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/slotstore"
)

// Kind is one registered store kind with its types erased: what
// storekind.Register makes of a storekind.Kind. Every function takes the
// kind's Options as a value of type Options, and only a store of the kind's
// own type.
type Kind struct {
	// Name is the kind's name in store.kind.
	Name string
	// Options is the type of the kind's YAML block; nil when it reads none.
	Options reflect.Type
	// Check reports what a configuration's options get wrong, as optkey
	// errors: the rules of the backend's Options.Validate and any the kind
	// adds.
	Check func(opts any) error
	// CheckLease reports settings that do not fit the shortest lease of a
	// job or duty, which holder names; nil when nothing depends on it.
	CheckLease func(opts any, shortest time.Duration, holder string) error
	// Open opens a store from options of type Options.
	Open func(ctx context.Context, opts any) (slotstore.Store, error)
	// Store is the type of the kind's stores, when the kind has an
	// Elector: two kinds with electors never claim one type.
	Store reflect.Type
	// Elector returns the elector for st, and false when st is not of this
	// kind. nil: duties elect in the slot store itself.
	Elector func(ctx context.Context, st slotstore.Store, log *slog.Logger) (leader.Elector, bool, error)
	// Unreachable reports whether an error of Open says the store could not
	// be reached or was not ready; nil adds nothing to the common cases.
	Unreachable func(err error) bool
	// RouteLogs sends the client library's own log lines through log when
	// st is of this kind, or nil (before the store is opened); nil when the
	// library logs nothing of its own.
	RouteLogs func(st slotstore.Store, log *slog.Logger)
}

// Value returns opts as a value of k's Options type: nil (or a nil
// pointer) is its zero value, and a pointer to one is followed. Any other type is an error
// naming both.
func (k Kind) Value(opts any) (any, error) {
	if k.Options == nil {
		if opts != nil {
			return nil, fmt.Errorf("store kind %q takes no options, not %T", k.Name, opts)
		}
		return nil, nil
	}
	v := reflect.ValueOf(opts)
	if opts == nil || v.Type() == reflect.PointerTo(k.Options) && v.IsNil() {
		return reflect.Zero(k.Options).Interface(), nil
	}
	if v.Type() == reflect.PointerTo(k.Options) {
		v = v.Elem()
	}
	if v.Type() != k.Options {
		return nil, fmt.Errorf("store kind %q takes %v, not %T", k.Name, k.Options, opts)
	}
	return v.Interface(), nil
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// Register adds k. It panics if k has no name or Open, or its name is
// taken: registration is static setup, done in init functions.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	switch _, dup := kinds[k.Name]; {
	case k.Name == "":
		panic("slotcron: store kind registered without a name")
	case k.Open == nil:
		panic(fmt.Sprintf("slotcron: store kind %q registered without Open", k.Name))
	case dup:
		panic(fmt.Sprintf("slotcron: store kind %q registered twice", k.Name))
	}
	for _, o := range kinds {
		if k.Elector != nil && o.Elector != nil && k.Store != nil && k.Store == o.Store {
			panic(fmt.Sprintf("slotcron: store kinds %q and %q both elect duties on a %v", o.Name, k.Name, k.Store))
		}
	}
	kinds[k.Name] = k
}

// Lookup returns the kind registered as name; "" is sqlite, the default.
func Lookup(name string) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[KindName(name)]
	return k, ok
}

// Kinds returns every registered kind: the ones slotcron ships in the order
// the documentation lists them, then any other by name.
func Kinds() []Kind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	rank := func(name string) int {
		if i := slices.Index(shipped, name); i >= 0 {
			return i
		}
		return len(shipped)
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if ra, rb := rank(a.Name), rank(b.Name); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// shipped names the kinds slotcron ships, in the documentation's order.
var shipped = []string{"sqlite", "memory", "redis", "postgres", "etcd"}

// ImportFor returns the package whose import links kind into a binary, for
// the kinds slotcron ships outside package scheduler; "" for any other.
func ImportFor(kind string) string {
	switch kind {
	case "redis", "postgres", "etcd":
		return "github.com/slotcron/slotcron/scheduler/" + kind
	}
	return ""
}

// KindName is the kind's name as logs show it.
func KindName(kind string) string {
	if kind == "" {
		return "sqlite"
	}
	return kind
}
