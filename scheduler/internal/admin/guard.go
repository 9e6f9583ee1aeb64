package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Guard decides who may do what on the admin endpoints. It keeps a SHA-256
// hash of each token, never the token; it re-reads the token files on
// Reload (SIGHUP) and, while Serve runs, whenever one changes; it counts
// failed authentications and limits them per client address. It is safe
// for concurrent use.
type Guard struct {
	sources     []TokenSource
	readAuth    bool
	openMetrics bool
	log         *slog.Logger
	failures    *prometheus.CounterVec
	limit       *limiter
	clientRoles map[string]Role // a verified client certificate's role, by its common name

	keys atomic.Pointer[[]key]
	// mu serialises reloads; readErr is the last error of each source
	// that failed (by index), logged once until it changes.
	mu      sync.Mutex
	readErr map[int]string
}

// key is one token as the guard keeps it: its hash, the source it came
// from (by index), and who holds it.
type key struct {
	sum    [sha256.Size]byte
	source int
	caller caller
}

// caller is who made a request: a token's name and role; the zero caller
// is anonymous.
type caller struct {
	name string
	role Role
	cert bool // named by a client certificate, not a token
}

// GuardConfig configures a Guard.
type GuardConfig struct {
	// Tokens are the tokens that may call; none refuses every request
	// that needs a role.
	Tokens []TokenSource
	// ReadAuth makes the reads need the reader role; off, they are open.
	ReadAuth bool
	// OpenMetrics serves /metrics without a token.
	OpenMetrics bool
	// Registerer takes slotcron_http_auth_failures_total; nil registers
	// it nowhere.
	Registerer prometheus.Registerer
	// Log is where failures and reloads are logged; nil discards them.
	Log *slog.Logger
	// ClientRoles gives the role of a verified client certificate (TLS
	// with a client CA) by its subject's common name.
	ClientRoles map[string]Role
}

// The reasons of a failed authentication, the label of the failures metric.
const (
	failMissing   = "missing"      // no token where one is needed
	failUnknown   = "unknown"      // a token that is not one of ours
	failForbidden = "forbidden"    // a token whose role is below the route's
	failLimited   = "rate_limited" // refused unread: too many failures from the client
)

// NewGuard reads every token of c and returns the guard; a token that
// cannot be read is an error naming its source, never the token.
func NewGuard(c GuardConfig) (*Guard, error) {
	g := &Guard{sources: slices.Clone(c.Tokens), readAuth: c.ReadAuth, openMetrics: c.OpenMetrics, log: c.Log,
		limit: newLimiter(), readErr: map[int]string{}, clientRoles: maps.Clone(c.ClientRoles)}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "slotcron", Name: "http_auth_failures_total",
		Help: "Requests to the admin HTTP endpoints refused for their token, by reason: missing (none where one is needed), unknown (not a configured token), forbidden (its role is below the route's), rate_limited (refused unread: too many failures from the client's address)."},
		[]string{"reason"})
	if c.Registerer != nil {
		if err := c.Registerer.Register(g.failures); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if !errors.As(err, &dup) {
				return nil, err
			}
			g.failures = dup.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	for _, r := range []string{failMissing, failUnknown, failForbidden, failLimited} {
		g.failures.WithLabelValues(r)
	}
	var keys []key
	for i, src := range g.sources {
		toks, err := ReadTokens(src)
		if err != nil {
			return nil, errors.New("http token " + src.Name + ": " + err.Error())
		}
		keys = appendKeys(keys, i, src, toks)
	}
	g.keys.Store(&keys)
	return g, nil
}

func appendKeys(keys []key, i int, src TokenSource, toks []string) []key {
	for _, t := range toks {
		keys = append(keys, key{sum: sha256.Sum256([]byte(t)), source: i, caller: caller{name: src.Name, role: src.Role}})
	}
	return keys
}

// Reload re-reads the tokens of every source. A source that cannot be read
// now keeps the tokens it had, and the error is logged (once, until it
// changes): a file briefly missing does not lock its callers out. A file
// read and empty holds no token: its tokens are revoked. To revoke a token,
// write its file without it.
func (g *Guard) Reload() {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := *g.keys.Load()
	var keys []key
	var changed []string
	for i, src := range g.sources {
		if src.File == "" && src.Env == "" {
			// A value of the configuration, read as NewGuard read it.
			if toks, err := ReadTokens(src); err == nil {
				keys = appendKeys(keys, i, src, toks)
			}
			continue
		}
		was := slices.DeleteFunc(slices.Clone(old), func(k key) bool { return k.source != i })
		toks, err := ReadTokens(src)
		if errors.Is(err, ErrEmptyToken) && src.File != "" {
			// Read, and empty: its tokens are revoked, a leaked one with
			// them.
			if msg := err.Error(); g.readErr[i] != msg {
				g.readErr[i] = msg
				g.log.Warn("http token file holds no token: its tokens are refused from now on", "name", src.Name)
			}
			if len(was) > 0 {
				changed = append(changed, src.Name)
			}
			continue
		}
		if err != nil {
			if msg := err.Error(); g.readErr[i] != msg {
				g.readErr[i] = msg
				g.log.Error("http token not re-read; it keeps the tokens it had", "name", src.Name, "err", msg)
			}
			keys = append(keys, was...)
			continue
		}
		delete(g.readErr, i)
		now := appendKeys(nil, i, src, toks)
		if !slices.EqualFunc(was, now, func(a, b key) bool { return a.sum == b.sum }) {
			changed = append(changed, src.Name)
		}
		keys = append(keys, now...)
	}
	g.keys.Store(&keys)
	if len(changed) > 0 {
		g.log.Info("http tokens re-read", "changed", changed)
	}
}

// watch re-reads the token files every period until ctx ends; it returns
// at once when no token is in a file.
func (g *Guard) watch(ctx context.Context, period time.Duration) {
	if !slices.ContainsFunc(g.sources, func(s TokenSource) bool { return s.File != "" }) {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Reload()
		}
	}
}

// lookup returns the caller whose token is token, comparing its hash with
// every key's in constant time.
func (g *Guard) lookup(token string) (caller, bool) {
	sum := sha256.Sum256([]byte(token))
	var found caller
	ok := 0
	for _, k := range *g.keys.Load() {
		eq := subtle.ConstantTimeCompare(sum[:], k.sum[:])
		if eq == 1 && ok == 0 {
			found = k.caller
		}
		ok |= eq
	}
	return found, ok == 1
}

// configured reports whether the guard has any token.
func (g *Guard) configured() bool { return len(g.sources) > 0 }
