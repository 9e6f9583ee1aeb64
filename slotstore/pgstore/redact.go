package pgstore

import (
	"net/url"
	"regexp"
	"strings"
)

// redacted replaces a password wherever a DSN would show it.
const redacted = "xxxxx"

// secretKeys are the connection parameters whose values are secrets.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// keywordSecret matches a secret in a keyword/value connection string:
// password=value or password='quoted value'.
var keywordSecret = regexp.MustCompile(`(?i)(^|\s)((?:ssl)?password)(\s*=\s*)('(?:\\.|[^'\\])*'|[^\s']*)`)

// redact returns dsn with its passwords replaced: the password of a URL's
// user info, and the values of password and sslpassword in a URL's query or
// in keyword/value pairs. Everything else is kept as written.
func redact(dsn string) string {
	out, _ := redactAndCollect(dsn)
	return out
}

// secretsOf returns the secret values dsn holds, as written and decoded, so
// that they can be scrubbed from error messages.
func secretsOf(dsn string) []string {
	_, secrets := redactAndCollect(dsn)
	return secrets
}

func redactAndCollect(dsn string) (string, []string) {
	var secrets []string
	keep := func(raw, decoded string) {
		if raw != "" {
			secrets = append(secrets, raw)
		}
		if decoded != "" && decoded != raw {
			secrets = append(secrets, decoded)
		}
	}
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		out := keywordSecret.ReplaceAllStringFunc(dsn, func(m string) string {
			p := keywordSecret.FindStringSubmatch(m)
			val := p[4]
			decoded := val
			if strings.HasPrefix(val, "'") && len(val) >= 2 {
				decoded = strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(val[1 : len(val)-1])
			}
			keep(val, decoded)
			return p[1] + p[2] + p[3] + redacted
		})
		return out, secrets
	}

	// scheme://[user[:password]@]host[:port][,...][/db][?k=v&...][#...]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if user, pw, ok := strings.Cut(authority[:at], ":"); ok {
			decoded, err := url.PathUnescape(pw)
			if err != nil {
				decoded = pw
			}
			keep(pw, decoded)
			authority = user + ":" + redacted + authority[at:]
		}
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if hasQuery {
		query, frag, hasFrag := strings.Cut(query, "#")
		pairs := strings.Split(query, "&")
		for i, kv := range pairs {
			k, v, ok := strings.Cut(kv, "=")
			key, err := url.QueryUnescape(k)
			if !ok || err != nil || !secretKeys[strings.ToLower(key)] {
				continue
			}
			decoded, err := url.QueryUnescape(v)
			if err != nil {
				decoded = v
			}
			keep(v, decoded)
			pairs[i] = k + "=" + redacted
		}
		tail = path + "?" + strings.Join(pairs, "&")
		if hasFrag {
			tail += "#" + frag
		}
	}
	return scheme + "://" + authority + tail, secrets
}
