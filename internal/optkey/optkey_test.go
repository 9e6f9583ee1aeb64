package optkey_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/slotcron/slotcron/internal/optkey"
)

func TestError(t *testing.T) {
	for _, c := range []struct {
		err  *optkey.Error
		want string
	}{
		{optkey.Errorf("tls.cert_file", "is set but %s is not", "key_file"), "tls.cert_file: is set but key_file is not"},
		{optkey.Errorf("db", "must not be negative"), "db: must not be negative"},
		{optkey.Errorf("", "the block as a whole"), "the block as a whole"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.err, got, c.want)
		}
	}
	if k := optkey.Errorf("tls.cert_file", "x").Key; !reflect.DeepEqual(k, []string{"tls", "cert_file"}) {
		t.Errorf("key %q, want [tls cert_file]", k)
	}
	if k := optkey.Errorf("", "x").Key; k != nil {
		t.Errorf("empty key: %q, want none", k)
	}
}

func TestAll(t *testing.T) {
	a, b, c := optkey.Errorf("db", "a"), optkey.Errorf("tls.ca_file", "b"), optkey.Errorf("pool_size", "c")
	plain := errors.New("plain")
	err := errors.Join(a, errors.Join(b, c), fmt.Errorf("wrapped: %w", a), plain)
	got := optkey.All(err)
	want := []*optkey.Error{a, b, c, a, {Msg: "plain"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("All: %v, want %v", got, want)
	}
	if got := optkey.All(nil); got != nil {
		t.Errorf("All(nil): %v, want nil", got)
	}
}
