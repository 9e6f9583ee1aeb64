package scheduler

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/scheduler/internal/admin"
)

// checkHTTP checks the http block: the listen address and every token,
// whose file or variable is read when the block serves (listen is set).
func (c *Config) checkHTTP(add func(*ConfigError)) {
	h := c.HTTP
	if l := h.Listen; l != "" {
		if _, _, err := net.SplitHostPort(l); err != nil {
			add(c.errAt(fmt.Sprintf("listen %q: want host:port, such as 127.0.0.1:9090", l), "http", "listen"))
		}
	}
	c.checkTLS(add)
	seen, sums := map[string]int{}, map[[sha256.Size]byte]int{}
	if h.Token != "" {
		seen["token"] = -1
		sums[sha256.Sum256([]byte(strings.TrimSpace(h.Token)))] = -1
	}
	for i, t := range h.Tokens {
		at := func(key, msg string) { add(c.tokenErr(i, key, msg)) }
		switch prev, dup := seen[t.Name]; {
		case t.Name == "":
			at("name", "a token needs a name: who calls with it, in logs and in what its writes record")
		case dup && prev < 0:
			at("name", `name "token" is http.token's: name this one otherwise`)
		case dup:
			at("name", fmt.Sprintf("name %q is http.tokens[%d]'s too: each token has a name of its own", t.Name, prev))
		default:
			seen[t.Name] = i
		}
		if t.Role == "" {
			at("role", "a token needs a role: reader, operator or admin")
		} else if _, ok := admin.ParseRole(t.Role); !ok {
			at("role", fmt.Sprintf("unknown role %q: reader, operator or admin", t.Role))
		}
		switch {
		case t.File != "" && t.Env != "":
			at("file", "both file and env: the token is in one of them")
		case t.File == "" && t.Env == "":
			at("", "neither file nor env: say where the token is, file: (its content) or env: (a variable's value)")
		case h.Listen != "":
			key := map[bool]string{true: "file", false: "env"}[t.File != ""]
			toks, err := admin.ReadTokens(t.source())
			if errors.Is(err, admin.ErrEmptyToken) {
				at(key, "the token is empty")
			} else if err != nil {
				at(key, err.Error())
			}
			c.checkSameToken(i, key, toks, sums, add)
		}
	}
}

// checkSameToken refuses a token of the i-th entry that an earlier entry
// (index in sums; -1 for http.token) has too: a caller would go by the
// first one's name and role. The error names the entries, never the token.
func (c *Config) checkSameToken(i int, key string, toks []string, sums map[[sha256.Size]byte]int, add func(*ConfigError)) {
	for _, tok := range toks {
		sum := sha256.Sum256([]byte(tok))
		prev, dup := sums[sum]
		switch {
		case !dup:
			sums[sum] = i
		case prev < 0:
			add(c.tokenErr(i, key, "holds the same token as http.token: give each caller a token of its own"))
		case prev != i:
			add(c.tokenErr(i, key, fmt.Sprintf("holds the same token as http.tokens[%d]: give each caller a token of its own", prev)))
		}
	}
}

// tokenErr is a ConfigError at key of the i-th token, or at the token
// itself when key is "" or not written.
func (c *Config) tokenErr(i int, key, msg string) *ConfigError {
	path, name := []string{"http", "tokens", strconv.Itoa(i)}, fmt.Sprintf("http.tokens[%d]", i)
	if key != "" {
		path, name = append(path, key), name+"."+key
	}
	return &ConfigError{File: c.src.fileName(), Line: c.src.line(path...), Key: name, Msg: msg}
}

// source is the admin API's view of the token.
func (t HTTPToken) source() admin.TokenSource {
	role, _ := admin.ParseRole(t.Role)
	return admin.TokenSource{Name: t.Name, Role: role, File: t.File, Env: t.Env}
}

// readAuth is whether the API's reads need a token: read_auth, or by
// default whether listen is not a loopback address.
func (h HTTPConfig) readAuth() bool {
	if h.ReadAuth != nil {
		return *h.ReadAuth
	}
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err != nil || !a.IsLoopback()
}

// guard builds the admin API's guard of h, its failures counted in reg and
// logged to log.
func (h HTTPConfig) guard(reg prometheus.Registerer, log *slog.Logger) (*admin.Guard, error) {
	var srcs []admin.TokenSource
	if h.Token != "" {
		srcs = append(srcs, admin.TokenSource{Name: "token", Role: admin.RoleAdmin, Value: h.Token})
	}
	for _, t := range h.Tokens {
		srcs = append(srcs, t.source())
	}
	gc := admin.GuardConfig{Tokens: srcs, ReadAuth: h.readAuth(), OpenMetrics: h.OpenMetrics == nil || *h.OpenMetrics,
		Registerer: reg, Log: log}
	if h.TLS != nil {
		gc.ClientRoles = map[string]admin.Role{}
		for name, role := range h.TLS.ClientRoles {
			gc.ClientRoles[name], _ = admin.ParseRole(role) // checked by checkTLS
		}
	}
	return admin.NewGuard(gc)
}

// checkTLS checks http.tls: both files given, and readable with a
// certificate when the block serves; a client CA file when client roles
// are given; each client role known.
func (c *Config) checkTLS(add func(*ConfigError)) {
	t := c.HTTP.TLS
	if t == nil {
		return
	}
	at := func(key, msg string) { add(c.errAt(msg, "http", "tls", key)) }
	switch {
	case t.CertFile == "":
		at("cert_file", "TLS needs the certificate's file (PEM), with its chain")
	case t.KeyFile == "":
		at("key_file", "TLS needs the key's file (PEM)")
	case c.HTTP.Listen != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			at("cert_file", err.Error())
		}
	}
	if len(t.ClientRoles) > 0 && t.ClientCAFile == "" {
		at("client_roles", "client roles need client_ca_file: the CAs their certificates are verified against")
	}
	if t.ClientCAFile != "" && c.HTTP.Listen != "" {
		if pem, err := os.ReadFile(t.ClientCAFile); err != nil {
			at("client_ca_file", err.Error())
		} else if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			at("client_ca_file", "no PEM certificate in "+t.ClientCAFile)
		}
	}
	names := map[string]bool{"token": c.HTTP.Token != ""}
	for _, tok := range c.HTTP.Tokens {
		names[tok.Name] = true
	}
	for name, role := range t.ClientRoles {
		switch _, ok := admin.ParseRole(role); {
		case strings.TrimSpace(name) == "":
			at("client_roles", "an empty common name: a certificate with none is no one to record; name its subject's CN")
		case names[name]:
			at("client_roles", fmt.Sprintf("%s: a token has that name too: the log could not tell who called; name them apart", name))
		case !ok:
			at("client_roles", fmt.Sprintf("%s: unknown role %q: reader, operator or admin", name, role))
		}
	}
}

// tlsFiles is h's TLS as the admin server takes it; nil for none.
func (h HTTPConfig) tlsFiles() *admin.TLSFiles {
	if h.TLS == nil {
		return nil
	}
	return &admin.TLSFiles{CertFile: h.TLS.CertFile, KeyFile: h.TLS.KeyFile, ClientCAFile: h.TLS.ClientCAFile}
}
