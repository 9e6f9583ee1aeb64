package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

func TestOptionsInvalid(t *testing.T) {
	for name, o := range map[string]redisstore.Options{
		"empty address":          {Addrs: []string{"127.0.0.1:1", ""}},
		"brace in prefix":        {Prefix: "app{1}:"},
		"negative db":            {DB: -1},
		"db in a cluster":        {Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, DB: 2},
		"negative timeout":       {ReadTimeout: -time.Second},
		"negative pool":          {PoolSize: -1},
		"tls settings, no tls":   {TLS: redisstore.TLSOptions{CAFile: "ca.pem"}},
		"tls cert without key":   {TLS: redisstore.TLSOptions{Enabled: true, CertFile: "c.pem"}},
		"tls skip verify alone":  {TLS: redisstore.TLSOptions{InsecureSkipVerify: true}},
		"negative wait replicas": {WaitReplicas: -1},
		"negative wait timeout":  {WaitReplicas: 1, WaitTimeout: -time.Second},
		"wait timeout alone":     {WaitTimeout: time.Second},
		"wait as long as a read": {WaitReplicas: 1, WaitTimeout: time.Second, ReadTimeout: time.Second},
		"wait under a ms":        {WaitReplicas: 1, WaitTimeout: time.Microsecond},
	} {
		s, err := redisstore.Open(t.Context(), o)
		if !errors.Is(err, slotstore.ErrInvalid) || s != nil {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestNewErrorsHideThePassword: connection and authentication failures name
// the addresses and never the password.
func TestNewErrorsHideThePassword(t *testing.T) {
	const password = "pa55-w0rd-not-this"
	r := testserver.StartRedis(t, "--requirepass", "the-right-one")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for name, addr := range map[string]string{"wrong password": r.Addr(), "nobody listening": "127.0.0.1:1"} {
		s, err := redisstore.Open(ctx, redisstore.Options{Addrs: []string{addr}, Password: password, DialTimeout: time.Second})
		if err == nil {
			s.Close()
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %q, want the address and not the password", name, err)
		}
	}
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, Password: "the-right-one"})
	won(t, claim(t, s, "r1", batch("auth", 0, 1, time.Minute)...))
}

// TestNew: the store uses the caller's client and leaves it open.
func TestNew(t *testing.T) {
	r := testserver.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	s, err := redisstore.New(c, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	won(t, claim(t, s, "r1", batch("own", 0, 1, time.Minute)...))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), slotstore.ClaimParams{Requests: batch("own", 1, 1, time.Minute)}); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("claim after close: %v, want ErrClosed", err)
	}
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Errorf("the caller's client after the store closed: %v", err)
	}
	keys, err := c.Keys(t.Context(), redisstore.DefaultPrefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("keys under the default prefix: %v, %v", keys, err)
	}
	for _, o := range []redisstore.Options{{Prefix: "x{"}, {Addr: r.Addr(), Prefix: "x:"}, {PoolSize: 4}} {
		if _, err := redisstore.New(c, o); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("New with %+v: %v, want ErrInvalid", o, err)
		}
	}
	// Waiting for replicas is the store's, not the connection's: New takes it.
	if _, err := redisstore.New(c, redisstore.Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond}); err != nil {
		t.Errorf("New with wait_replicas: %v", err)
	}
}
