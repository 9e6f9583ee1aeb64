package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
)

// A token file is re-read while the server runs: the new token written
// beside the old, both work; the old removed, only the new one does. A
// file that cannot be read for a while keeps the tokens it had, and says
// so once. No restart, no signal.
func TestTokenFileRotation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ci-bot")
	write := func(text string) {
		t.Helper()
		// Write and rename, as a Kubernetes secret volume swaps its files.
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write("old-t0ken\n")
	logs := &testlog.Buffer{}
	g, err := NewGuard(GuardConfig{Tokens: []TokenSource{{Name: "ci-bot", Role: RoleOperator, File: file}}, ReadAuth: true,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	g.limit.burst = 1e9 // the old token's refusals, polled, are not what this test is about
	r := newRig(t, rigConfig{opts: Options{Guard: g}})
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		g.watch(ctx, 10*time.Millisecond)
	}()
	t.Cleanup(func() {
		cancel()
		<-watched
	})
	works := func(token string) error {
		code, _, body := r.as(t, token, "", "GET", "/api/whoami", "")
		if code != http.StatusOK || !strings.Contains(body, `"ci-bot"`) {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	}
	refused := func(token string) error {
		if code, _, body := r.as(t, token, "", "GET", "/api/whoami", ""); code != http.StatusUnauthorized {
			return fmt.Errorf("%d %s, want 401", code, body)
		}
		return nil
	}
	if err := works("old-t0ken"); err != nil {
		t.Fatalf("the first token: %v", err)
	}
	if err := refused("new-t0ken"); err != nil {
		t.Fatalf("the next token, before it is written: %v", err)
	}

	write("new-t0ken\nold-t0ken\n")
	poll.Until(t, 10*time.Second, "the new token to work", func() error { return works("new-t0ken") })
	if err := works("old-t0ken"); err != nil {
		t.Fatalf("the old token beside the new one: %v", err)
	}

	write("new-t0ken\n")
	poll.Until(t, 10*time.Second, "the old token to be refused", func() error { return refused("old-t0ken") })
	if err := works("new-t0ken"); err != nil {
		t.Fatalf("the new token alone: %v", err)
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the missing file logged", func() error {
		if !strings.Contains(logs.String(), "http token not re-read") {
			return errors.New("not logged yet")
		}
		return nil
	})
	if err := works("new-t0ken"); err != nil {
		t.Fatalf("the token of a file gone missing: %v", err)
	}
	write("newer-t0ken")
	poll.Until(t, 10*time.Second, "the file back, with a newer token", func() error { return works("newer-t0ken") })
	if n := strings.Count(logs.String(), "http token not re-read"); n != 1 {
		t.Errorf("the missing file logged %d times, want once:\n%s", n, logs.String())
	}
	for _, tok := range []string{"old-t0ken", "new-t0ken", "newer-t0ken"} {
		if strings.Contains(logs.String(), tok) {
			t.Errorf("token %q in the log:\n%s", tok, logs.String())
		}
	}
}

// ReadTokens reads a file's tokens one a line, trimmed, and refuses an
// empty file, a missing one and an unset variable without quoting a token.
func TestReadTokens(t *testing.T) {
	dir := t.TempDir()
	f := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("SLOTCRON_TEST_TOKEN", "  env-t0ken \n")
	for _, c := range []struct {
		src  TokenSource
		want string // tokens joined by " ", or "error: <part of it>"
	}{
		{TokenSource{File: f("one", " t0ken \n")}, "t0ken"},
		{TokenSource{File: f("two", "new\r\n\n old\n")}, "new old"},
		{TokenSource{File: f("empty", " \n\n")}, "error: empty"},
		{TokenSource{File: filepath.Join(dir, "missing")}, "error: no such file"},
		{TokenSource{Env: "SLOTCRON_TEST_TOKEN"}, "env-t0ken"},
		{TokenSource{Env: "SLOTCRON_TEST_UNSET"}, "error: not set"},
		{TokenSource{Value: "v"}, "v"},
	} {
		toks, err := ReadTokens(c.src)
		got := strings.Join(toks, " ")
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(c.want, "error: ") && got != c.want || strings.HasPrefix(c.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
			t.Errorf("%+v: %q, want %q", c.src, got, c.want)
		}
	}
}

// TestTokenReadsEdgeCases: http.token's value, trimmed when the guard is
// made, is trimmed again at a re-read; a file with a byte-order mark and
// CRLF lines gives its tokens; a file emptied revokes its tokens, one
// that cannot be read keeps them.
func TestTokenReadsEdgeCases(t *testing.T) {
	dir := t.TempDir()
	ci, bom := filepath.Join(dir, "ci"), filepath.Join(dir, "bom")
	for f, text := range map[string]string{ci: "ci-t0ken\n", bom: "\ufeffbom-t0ken\r\nsecond-t0ken\r\n"} {
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := NewGuard(GuardConfig{Tokens: []TokenSource{{Name: "token", Role: RoleAdmin, Value: "legacy-t0ken\n"},
		{Name: "ci", Role: RoleOperator, File: ci}, {Name: "bom", Role: RoleReader, File: bom}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, tok := range []string{"legacy-t0ken", "ci-t0ken", "bom-t0ken", "second-t0ken"} {
			if _, ok := g.lookup(tok); !ok {
				t.Errorf("%q refused", tok)
			}
		}
		g.Reload()
	}
	if err := os.WriteFile(ci, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bom); err != nil {
		t.Fatal(err)
	}
	g.Reload()
	if _, ok := g.lookup("ci-t0ken"); ok {
		t.Error("a token whose file was emptied is still taken")
	}
	if _, ok := g.lookup("bom-t0ken"); !ok {
		t.Error("a token whose file is briefly missing was dropped")
	}
}
