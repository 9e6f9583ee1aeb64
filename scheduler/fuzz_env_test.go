package scheduler

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExpandEnv checks ${VAR} expansion against the rule Load documents,
// written out plainly in expandModel: the value of a quoted scalar is its
// text expanded by that rule, whatever the text and the variable's value;
// and expansion never adds or removes a line, so errors keep their lines.
func FuzzExpandEnv(f *testing.F) {
	for _, tc := range []struct{ text, value string }{
		// From TestEnvExpansionAndDefaults and TestEnvValuesKeepLines.
		{"${SLOTCRON_FUZZ_UNSET}${SLOTCRON_FUZZ}", "web-1 # pod: x\nunknown: 1"},
		{"${SLOTCRON_FUZZ_EMPTY:-json}", ""},
		{"pa$$word $${HOME}", "x"},
		{"${SLOTCRON_FUZZ}", "a\nb\nc: d"},
		{"${SLOTCRON_FUZZ:-}x${SLOTCRON_FUZZ_UNSET:-y}", "'\""},
		{"$$${SLOTCRON_FUZZ}}", "v"},
		{"${SLOTCRON_FUZZ:-a}b}c${", "${SLOTCRON_FUZZ}"},
		{"${1X} ${X-Y} ${SLOTCRON_FUZZ:+a} ${ SLOTCRON_FUZZ}", "v"},
		// Found reading the code: a word that looks like the placeholders
		// expandEnv parses with, and a default spanning lines.
		{"__slotcron_env_0__ ${SLOTCRON_FUZZ}", "v"},
		{"${SLOTCRON_FUZZ_UNSET:-two\nlines}", ""},
	} {
		f.Add(tc.text, tc.value)
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		t.Setenv("SLOTCRON_FUZZ", strings.ReplaceAll(value, "\x00", "")) // no NUL in the environment
		t.Setenv("SLOTCRON_FUZZ_EMPTY", "")

		if out, _ := expandEnv([]byte(text)); yamlLines(out) != yamlLines([]byte(text)) {
			t.Fatalf("expanding %q moved lines: %q", text, out)
		}

		if !quotable(text) {
			return
		}
		doc := "replica: '" + strings.ReplaceAll(text, "'", "''") + "'\n"
		cfg, err := Parse("fuzz.yaml", []byte(doc))
		if expandModel(text) == "" && unsetRef(text) {
			// A value an unset variable left empty is an error.
			if err == nil || !strings.Contains(err.Error(), "not set in the environment") {
				t.Fatalf("%q: %v, want an error naming the unset variable", doc, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if want := expandModel(text); cfg.Replica != want {
			t.Fatalf("%q expanded to %q, want %q", text, cfg.Replica, want)
		}
	})
}

// expandModel expands ${NAME}, ${NAME:-default} and $${ in s as Load's
// documentation says, scanning left to right.
func expandModel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if v, n, ok := envReference(s[i:]); ok {
			b.WriteString(v)
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// envReference reads a reference at the start of s: its value and length.
func envReference(s string) (value string, n int, ok bool) {
	rest, found := strings.CutPrefix(s, "${")
	if !found {
		return "", 0, false
	}
	name := 0
	for name < len(rest) && (rest[name] == '_' || 'a' <= rest[name]|0x20 && rest[name]|0x20 <= 'z' ||
		name > 0 && '0' <= rest[name] && rest[name] <= '9') {
		name++
	}
	if name == 0 {
		return "", 0, false
	}
	env := os.Getenv(rest[:name])
	switch {
	case strings.HasPrefix(rest[name:], "}"):
		return env, 2 + name + 1, true
	case strings.HasPrefix(rest[name:], ":-"):
		def, _, closed := strings.Cut(rest[name+2:], "}")
		if !closed || strings.ContainsAny(def, "\r\n\u0085\u2028\u2029") {
			return "", 0, false
		}
		if env == "" {
			env = def
		}
		return env, 2 + name + 2 + len(def) + 1, true
	}
	return "", 0, false
}

// quotable reports whether s can be written as one single-quoted YAML
// scalar on one line: printable, with no line break of any kind.
func quotable(s string) bool {
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r == 0x85, r == 0x2028, r == 0x2029, r == 0xFEFF, r >= 0xFFFE && r <= 0xFFFF:
			return false
		case r == '\t', r >= 0x20 && r <= 0x7E, r >= 0xA0:
		default:
			return false
		}
	}
	return true
}

// unsetRef reports whether s refers, without a default, to a variable that
// is not set, scanning as expandModel does.
func unsetRef(s string) bool {
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			i += 3
			continue
		}
		if _, n, ok := envReference(s[i:]); ok {
			ref := s[i+2 : i+n-1]
			if _, set := os.LookupEnv(ref); !set && !strings.Contains(ref, ":-") {
				return true
			}
			i += n
			continue
		}
		i++
	}
	return false
}
