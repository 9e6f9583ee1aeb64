package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// Validate names the YAML key of every setting it refuses, and Open
// refuses them with ErrInvalid before it contacts anything.
func TestOptionsInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    etcdstore.Options
		keys []string // the keys Validate names, in order
	}{
		{"empty endpoint", etcdstore.Options{Endpoints: []string{"http://127.0.0.1:1", ""}}, []string{"endpoints"}},
		{"endpoint without scheme", etcdstore.Options{Endpoints: []string{"127.0.0.1:2379"}}, []string{"endpoints"}},
		{"endpoint of another scheme", etcdstore.Options{Endpoints: []string{"unix:///run/etcd.sock"}}, []string{"endpoints"}},
		{"endpoint with a path", etcdstore.Options{Endpoints: []string{"http://h:2379/v3"}}, []string{"endpoints"}},
		{"endpoint with credentials", etcdstore.Options{Endpoints: []string{"http://u:p@h:2379"}}, []string{"endpoints"}},
		{"mixed schemes", etcdstore.Options{Endpoints: []string{"http://a:2379", "https://b:2379"}}, []string{"endpoints"}},
		{"tls with http", etcdstore.Options{Endpoints: []string{"http://a:2379"}, TLS: etcdstore.TLSOptions{CAFile: "ca.pem"}},
			[]string{"tls"}},
		{"cert without key", etcdstore.Options{TLS: etcdstore.TLSOptions{CertFile: "c.pem"}}, []string{"tls.cert_file"}},
		{"key without cert", etcdstore.Options{TLS: etcdstore.TLSOptions{KeyFile: "k.pem"}}, []string{"tls.key_file"}},
		{"username alone", etcdstore.Options{Username: "u"}, []string{"password"}},
		{"password alone", etcdstore.Options{Password: "p"}, []string{"username"}},
		{"prefix of slashes", etcdstore.Options{Prefix: "//"}, []string{"prefix"}},
		{"negative dial timeout", etcdstore.Options{DialTimeout: -time.Second}, []string{"dial_timeout"}},
		{"request timeout too long", etcdstore.Options{RequestTimeout: etcdstore.MaxTimeout + 1}, []string{"request_timeout"}},
		{"negative lease", etcdstore.Options{LeaseTTL: -time.Second}, []string{"lease_ttl"}},
		{"lease not in seconds", etcdstore.Options{LeaseTTL: 1500 * time.Millisecond}, []string{"lease_ttl"}},
		{"too few txn ops", etcdstore.Options{MaxTxnOps: etcdstore.MinMaxTxnOps - 1}, []string{"max_txn_ops"}},
		{"several", etcdstore.Options{Endpoints: []string{"ftp://x"}, LeaseTTL: -1, MaxTxnOps: 1},
			[]string{"endpoints", "lease_ttl", "max_txn_ops"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range optkey.All(tc.o.Validate()) {
				got = append(got, strings.Join(e.Key, "."))
			}
			if strings.Join(got, " ") != strings.Join(tc.keys, " ") {
				t.Errorf("Validate names %q, want %q (%v)", got, tc.keys, tc.o.Validate())
			}
			s, err := etcdstore.Open(t.Context(), tc.o)
			if !errors.Is(err, slotstore.ErrInvalid) || s != nil {
				t.Errorf("Open: %v, want ErrInvalid", err)
			}
		})
	}
	for _, o := range []etcdstore.Options{
		{},
		{Endpoints: []string{"https://a:2379", "https://b:2379"}, TLS: etcdstore.TLSOptions{CAFile: "ca.pem", ServerName: "etcd"}},
		{Endpoints: []string{"http://a:2379/"}, Username: "u", Password: "p", Prefix: "app", LeaseTTL: 2 * time.Second,
			MaxTxnOps: etcdstore.MinMaxTxnOps, DialTimeout: time.Second, RequestTimeout: time.Second},
		{TLS: etcdstore.TLSOptions{CertFile: "c.pem", KeyFile: "k.pem"}},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", o, err)
		}
	}
}

// The prefix always ends with "/"; keys go under it, and nothing else.
func TestPrefix(t *testing.T) {
	p := strings.TrimSuffix(freshPrefix(), "/")
	s := openWith(t, etcdstore.Options{Prefix: p})
	if s.Prefix() != p+"/" {
		t.Errorf("prefix %q, want %q", s.Prefix(), p+"/")
	}
	won(t, claim(t, s, "r", slotstore.ClaimRequest{Job: "j/with/slashes", Slot: nextHour(), Lease: time.Minute}))
	cl := s.Client()
	resp, err := cl.Get(t.Context(), p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Key), p+"/") {
			t.Errorf("key %q outside the prefix %q", kv.Key, p+"/")
		}
	}
	if len(resp.Kvs) == 0 {
		t.Error("no keys under the prefix")
	}
}

// Open fails fast, naming the endpoints, when no member answers; its error
// never holds the password.
func TestOpenUnreachable(t *testing.T) {
	const password = "pa55-w0rd-not-this"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	eps := []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}
	began := time.Now()
	s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: eps, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open of endpoints nobody listens on: no error")
	}
	t.Logf("Open failed after %v: %v", time.Since(began), err)
	for _, e := range eps {
		if !strings.Contains(err.Error(), e) {
			t.Errorf("error %q does not name %s", err, e)
		}
	}
	s, err = etcdstore.Open(ctx, etcdstore.Options{Endpoints: eps, Username: "u", Password: password, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open with a password of endpoints nobody listens on: no error")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("error %q holds the password", err)
	}
}

// New uses the caller's client, refuses connection settings, and leaves
// the client open when it closes.
func TestNew(t *testing.T) {
	c := sharedEtcd(t)
	cl, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialKeepAliveTime: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := etcdstore.New(t.Context(), cl, etcdstore.Options{Endpoints: c.Endpoints()}); !errors.Is(err, slotstore.ErrInvalid) ||
		!strings.Contains(err.Error(), "endpoints") {
		t.Errorf("New with endpoints: %v, want ErrInvalid naming them", err)
	}
	if _, err := etcdstore.New(t.Context(), nil, etcdstore.Options{}); !errors.Is(err, slotstore.ErrInvalid) {
		t.Errorf("New with no client: %v, want ErrInvalid", err)
	}
	s, err := etcdstore.New(t.Context(), cl, etcdstore.Options{Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	won(t, claim(t, s, "r", slotstore.ClaimRequest{Job: "own", Slot: nextHour(), Lease: time.Minute}))
	if s.Client() != cl {
		t.Error("Client() is not the client given")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(t.Context(), slotstore.HistoryParams{}); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("history after close: %v, want ErrClosed", err)
	}
	if _, err := cl.Get(t.Context(), s.Prefix(), clientv3.WithPrefix()); err != nil {
		t.Errorf("the caller's client after the store closed: %v", err)
	}
}

// claim claims reqs for replica and fails the test on an error.
func claim(t testing.TB, s slotstore.Store, replica string, reqs ...slotstore.ClaimRequest) []slotstore.ClaimResult {
	t.Helper()
	res, err := s.Claim(t.Context(), slotstore.ClaimParams{Replica: replica, Requests: reqs})
	if err != nil {
		t.Fatalf("claim %d slots by %s: %v", len(reqs), replica, err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("claim %d slots by %s: %d results", len(reqs), replica, len(res))
	}
	return res
}

// won fails the test unless every result is Won.
func won(t testing.TB, res []slotstore.ClaimResult) {
	t.Helper()
	for i, r := range res {
		if r.Status != slotstore.Won {
			t.Fatalf("result %d: %v, want won (marker %+v)", i, r.Status, r.Marker)
		}
	}
}
