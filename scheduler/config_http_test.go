package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mistake in http.tokens is named by file, line and key, and none
// quotes a token.
func TestHTTPTokenErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	empty := filepath.Join(dir, "empty")
	for p, text := range map[string]string{good: "s3cret-t0ken\n", empty: "\n"} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SLOTCRON_TEST_READER", "r3ader-t0ken")
	t.Setenv("SLOTCRON_TEST_BLANK", " ")
	head := "http:\n  listen: 127.0.0.1:0\n  tokens:\n"
	for _, tc := range []struct{ name, tokens, want string }{
		{"unknown role", "    - {name: a, role: root, file: " + good + "}\n", `test.yaml:4: http.tokens[0].role: unknown role "root": reader, operator or admin`},
		{"no role", "    - {name: a, file: " + good + "}\n", "test.yaml:4: http.tokens[0].role: a token needs a role: reader, operator or admin"},
		{"missing name", "    - {role: reader, file: " + good + "}\n", "test.yaml:4: http.tokens[0].name: a token needs a name"},
		{"duplicate name", "    - {name: a, role: reader, file: " + good + "}\n    - name: a\n      role: admin\n      env: SLOTCRON_TEST_READER\n",
			`test.yaml:5: http.tokens[1].name: name "a" is http.tokens[0]'s too`},
		{"the legacy token's name", "    - {name: token, role: reader, file: " + good + "}\n  token: x\n", `test.yaml:4: http.tokens[0].name: name "token" is http.token's`},
		{"both file and env", "    - name: a\n      role: reader\n      file: " + good + "\n      env: SLOTCRON_TEST_READER\n", "test.yaml:6: http.tokens[0].file: both file and env"},
		{"neither file nor env", "    - name: a\n      role: reader\n", "test.yaml:4: http.tokens[0]: neither file nor env"},
		{"empty file", "    - {name: a, role: reader, file: " + empty + "}\n", "test.yaml:4: http.tokens[0].file: the token is empty"},
		{"empty variable", "    - {name: a, role: reader, env: SLOTCRON_TEST_BLANK}\n", "test.yaml:4: http.tokens[0].env: the token is empty"},
		{"unset variable", "    - {name: a, role: reader, env: SLOTCRON_TEST_UNSET_TOKEN}\n", "test.yaml:4: http.tokens[0].env: environment variable SLOTCRON_TEST_UNSET_TOKEN is not set"},
		{"unreadable file", "    - {name: a, role: reader, file: " + filepath.Join(dir, "nope") + "}\n", "test.yaml:4: http.tokens[0].file: open " + filepath.Join(dir, "nope")},
		{"the same token twice", "    - {name: a, role: reader, file: " + good + "}\n    - {name: b, role: admin, file: " + good + "}\n",
			"test.yaml:5: http.tokens[1].file: holds the same token as http.tokens[0]"},
		{"http.token's token", "    - {name: a, role: reader, env: SLOTCRON_TEST_READER}\n  token: r3ader-t0ken\n",
			"test.yaml:4: http.tokens[0].env: holds the same token as http.token"},
		{"unknown key", "    - {name: a, role: reader, file: " + good + ", files: [x]}\n", `test.yaml:4: http.tokens[0].files: unknown key (did you mean "file"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(head+tc.tokens))
			if err == nil {
				err = cfg.Validate(demoRegistry())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), "s3cret-t0ken") || strings.Contains(err.Error(), "r3ader-t0ken")) {
				t.Errorf("a token in the error: %v", err)
			}
		})
	}
	cfg, err := Parse("test.yaml", []byte(head+"    - {name: ci, role: operator, file: "+good+"}\n    - {name: grafana, role: reader, env: SLOTCRON_TEST_READER}\n"+
		"jobs: {hello: {schedule: '@hourly'}}\n"))
	if err == nil {
		err = cfg.Validate(demoRegistry())
	}
	if err != nil {
		t.Fatalf("good tokens: %v", err)
	}
}

// read_auth defaults to on but on a loopback address.
func TestReadAuthDefault(t *testing.T) {
	off := false
	for _, c := range []struct {
		h    HTTPConfig
		want bool
	}{
		{HTTPConfig{Listen: "127.0.0.1:9090"}, false},
		{HTTPConfig{Listen: "[::1]:9090"}, false},
		{HTTPConfig{Listen: "localhost:9090"}, false},
		{HTTPConfig{Listen: "0.0.0.0:9090"}, true},
		{HTTPConfig{Listen: ":9090"}, true},
		{HTTPConfig{Listen: "10.0.0.5:9090"}, true},
		{HTTPConfig{Listen: "0.0.0.0:9090", ReadAuth: &off}, false},
	} {
		if got := c.h.readAuth(); got != c.want {
			t.Errorf("%+v: read_auth %v, want %v", c.h, got, c.want)
		}
	}
}
