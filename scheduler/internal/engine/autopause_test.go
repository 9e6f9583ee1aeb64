package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A pause's reason holds what the store accepts whatever the job's error
// says: at most 1,000 bytes of UTF-8 without NUL bytes, cut at a rune.
func TestNoteText(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"short", "3 failed slots in a row; last error: boom"},
		{"long", strings.Repeat("é", 900)},
		{"invalid", "bad \xff\xfe bytes and a \x00 NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := noteText(tc.in)
			if len(got) > maxPauseNote || !utf8.ValidString(got) || strings.Contains(got, "\x00") {
				t.Errorf("noteText(%q) = %q (%d bytes): want valid text of at most %d bytes", tc.in, got, len(got), maxPauseNote)
			}
			if utf8.ValidString(tc.in) && len(tc.in) <= maxPauseNote && got != tc.in {
				t.Errorf("noteText(%q) = %q, want it unchanged", tc.in, got)
			}
		})
	}
	if got := noteText(strings.Repeat("é", 900)); !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("a long note is cut to %q, want its start and an ellipsis", got)
	}
}
