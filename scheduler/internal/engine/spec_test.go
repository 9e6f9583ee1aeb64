package engine

import (
	"testing"
)

// A spec body is read in full or not at all: a field this build does not
// know (a newer build's calendar, say) makes it unreadable here, so its
// job is left to replicas that read it, not run without the setting.
func TestParseBodyRefusesUnknownFields(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"known", `{"schedule":"0 2 * * *","zone":"UTC","except":[{"name":"h","dates":["2026-12-25"]}]}`, true},
		{"unknown field", `{"schedule":"0 2 * * *","zone":"UTC","holidays":["2026-12-25"]}`, false},
		{"trailing value", `{"schedule":"0 2 * * *"} {}`, false},
		{"empty", ``, false},
	} {
		if _, ok := ParseBody([]byte(tc.body)); ok != tc.ok {
			t.Errorf("%s: read %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
