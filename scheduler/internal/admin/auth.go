package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
)

// codeRateLimited answers a client refused for too many failed
// authentications (429).
const codeRateLimited = "rate_limited"

type callerKey struct{}

// callerOf is who made r, as need found; anonymous when no token was
// needed nor given.
func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// actorOf is who c is in the actions log: its token's name and role, or
// "anonymous".
func actorOf(c caller) engine.Actor {
	if c.name == "" {
		return engine.Actor{Who: "anonymous", Via: "http"}
	}
	return engine.Actor{Who: c.name, Role: c.role.String(), Via: "http"}
}

// readRole is the role the reads need: reader with read_auth, else none.
func (g *Guard) readRole() Role {
	if g.readAuth {
		return RoleReader
	}
	return RoleNone
}

// need lets a request through to next only from a caller whose role is at
// least role; its caller is in the request's context (callerOf). A bearer
// token given where none is needed must still be good.
func (g *Guard) need(role Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.authenticate(w, r, role)
		if !ok {
			return
		}
		ctx := engine.WithActor(context.WithValue(r.Context(), callerKey{}, c), actorOf(c))
		next(w, r.WithContext(ctx))
	}
}

// authenticate finds r's caller and checks it has role need, or answers:
// 429 rate_limited to a client over its limit of failures whose token is
// not ours (or missing); 401 unauthorized for no token or a token not ours; 403
// forbidden for a role below need, or no token configured at all.
func (g *Guard) authenticate(w http.ResponseWriter, r *http.Request, need Role) (caller, bool) {
	// The scheme is case-insensitive (RFC 9110), the token is not.
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimLeft(token, " ")
	bearer := ok && strings.EqualFold(scheme, "Bearer") && token != ""
	if !bearer && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return g.byCertificate(w, r, need)
	}
	if need == RoleNone && !bearer {
		return caller{}, true // another scheme's credentials, a proxy's, are not ours to judge
	}
	if need > RoleNone && !g.configured() {
		what := "mutations are disabled"
		if need == RoleReader {
			what = "reads need a token (http.read_auth) and none is configured"
		}
		httpError(w, http.StatusForbidden, codeForbidden, what+": set http.tokens")
		return caller{}, false
	}
	// A token of ours passes whatever its address's failures: the limit
	// bounds what guesses cost (their logs, their counts), and must not
	// let a guesser — or a client sharing a proxy's address — lock out
	// those who hold a token. A lookup is one SHA-256.
	c, found := caller{}, false
	reason := failMissing
	if bearer {
		c, found = g.lookup(token)
		reason = failUnknown
	}
	client := clientOf(r)
	if !found && !g.limit.allow(client) {
		g.failures.WithLabelValues(failLimited).Inc()
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, codeRateLimited, "too many failed authentications from this address: try again later")
		return caller{}, false
	}
	if !found {
		g.failed(r, reason)
		if g.limit.fail(client) {
			g.log.Warn("http authentication failures over the limit: the client is answered 429 until they slow down",
				"remote", r.RemoteAddr, "route", r.Pattern)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="slotcron"`)
		httpError(w, http.StatusUnauthorized, codeUnauthorized, "bad or missing bearer token")
		return caller{}, false
	}
	if c.role < need {
		g.forbid(w, r, c, need, "")
		return caller{}, false
	}
	return c, true
}

// allowed reports whether r's caller has role need for what (such as
// "pause of the whole cluster"), and else answers 403 forbidden.
func (g *Guard) allowed(w http.ResponseWriter, r *http.Request, need Role, what string) bool {
	c := callerOf(r)
	if c.role >= need {
		return true
	}
	g.forbid(w, r, c, need, what)
	return false
}

// forbid answers 403 forbidden to c, whose role is below need.
func (g *Guard) forbid(w http.ResponseWriter, r *http.Request, c caller, need Role, what string) {
	g.failed(r, failForbidden, "name", c.name, "role", c.role.String(), "needs", need.String())
	if what == "" {
		what = r.Method + " " + r.URL.Path
	}
	who := "an anonymous caller"
	switch {
	case c.cert:
		who = fmt.Sprintf("client certificate %q has the %s role", c.name, c.role)
	case c.name != "":
		who = fmt.Sprintf("token %q has the %s role", c.name, c.role)
	}
	httpError(w, http.StatusForbidden, codeForbidden, fmt.Sprintf("%s needs the %s role; %s", what, need, who))
}

// failed logs and counts a failed authentication of r for reason: never
// the token.
func (g *Guard) failed(r *http.Request, reason string, attrs ...any) {
	g.failures.WithLabelValues(reason).Inc()
	g.log.Warn("http authentication failed", append([]any{"remote", r.RemoteAddr, "route", r.Pattern, "reason", reason}, attrs...)...)
}

// whoami answers GET /api/whoami: the caller's name and role, both empty
// for an anonymous reader.
func whoami(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	writeJSON(w, http.StatusOK, map[string]string{"name": c.name, "role": c.role.String()})
}

// byCertificate authenticates r by its client certificate, verified
// against the client CAs: the caller is its subject's common name, in the
// role http.tls.client_roles gives it; a name given none is refused (403),
// counted and logged as forbidden.
func (g *Guard) byCertificate(w http.ResponseWriter, r *http.Request, need Role) (caller, bool) {
	name := r.TLS.PeerCertificates[0].Subject.CommonName
	role, ok := g.clientRoles[name]
	if name == "" {
		ok = false // a certificate with no common name is no one to record
	}
	if !ok && need == RoleNone {
		return caller{}, true // an open read: as anonymous as a caller with no certificate
	}
	if !ok {
		g.failed(r, failForbidden)
		g.log.Warn("http client certificate has no role", "name", name, "remote", r.RemoteAddr, "route", r.Pattern)
		httpError(w, http.StatusForbidden, codeForbidden, fmt.Sprintf("client certificate %q has no role: add its common name to http.tls.client_roles", name))
		return caller{}, false
	}
	c := caller{name: name, role: role, cert: true}
	if c.role < need {
		g.forbid(w, r, c, need, "")
		return caller{}, false
	}
	return c, true
}
