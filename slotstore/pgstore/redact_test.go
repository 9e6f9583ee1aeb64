package pgstore

import (
	"errors"
	"slices"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		dsn, want string
		secrets   []string
	}{
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db", []string{"pw"}},
		{"postgresql://u:p%40ss@h1,h2/db?sslmode=require", "postgresql://u:xxxxx@h1,h2/db?sslmode=require", []string{"p%40ss", "p@ss"}},
		{"postgres://u@h/db?password=a%20b&sslpassword=k", "postgres://u@h/db?password=xxxxx&sslpassword=xxxxx", []string{"a%20b", "a b", "k"}},
		{"postgres://u:pw@h/db?x=1#frag", "postgres://u:xxxxx@h/db?x=1#frag", []string{"pw"}},
		{"postgres://u@h/db", "postgres://u@h/db", nil},
		{"postgres://h", "postgres://h", nil},
		{"host=h password=pw user=u", "host=h password=xxxxx user=u", []string{"pw"}},
		{"host=h PASSWORD = 'p w\\'s' user=u", "host=h PASSWORD = xxxxx user=u", []string{`'p w\'s'`, "p w's"}},
		{"password=pw sslpassword=k", "password=xxxxx sslpassword=xxxxx", []string{"pw", "k"}},
		{"host=h mypassword=keep", "host=h mypassword=keep", nil},
		{"", "", nil},
	} {
		if got := redact(tc.dsn); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
		if got := secretsOf(tc.dsn); !slices.Equal(got, tc.secrets) {
			t.Errorf("secretsOf(%q) = %q, want %q", tc.dsn, got, tc.secrets)
		}
	}
}

func TestScrub(t *testing.T) {
	cause := errors.New("dial tcp: user u password hunter2 refused")
	err := scrub(cause, []string{"hunter2"})
	if err.Error() != "dial tcp: user u password xxxxx refused" {
		t.Errorf("scrubbed: %q", err)
	}
	if !errors.Is(err, cause) {
		t.Error("scrubbed error does not unwrap to its cause")
	}
	if scrub(cause, nil) != cause || scrub(nil, []string{"x"}) != nil {
		t.Error("scrub changed an error with nothing to hide")
	}
}
