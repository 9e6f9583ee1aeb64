package redisstore_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// keysOf returns the dotted keys of the problems err holds, sorted.
func keysOf(err error) []string {
	var out []string
	for _, e := range optkey.All(err) {
		out = append(out, strings.Join(e.Key, "."))
	}
	sort.Strings(out)
	return out
}

// TestValidate: each refused setting is named by its YAML key, and every
// problem is reported, not just the first.
func TestValidate(t *testing.T) {
	tls := func(t redisstore.TLSOptions) redisstore.Options { return redisstore.Options{TLS: t} }
	for _, c := range []struct {
		name string
		o    redisstore.Options
		keys []string // nil: valid
	}{
		{"zero value", redisstore.Options{}, nil},
		{"addr alone", redisstore.Options{Addr: "r:6379"}, nil},
		{"addr and addrs", redisstore.Options{Addr: "r:1", Addrs: []string{"r:2"}}, nil},
		{"sentinel db", redisstore.Options{Addrs: []string{"s:1", "s:2"}, MasterName: "m", DB: 3}, nil},
		{"full tls", tls(redisstore.TLSOptions{Enabled: true, CAFile: "ca", CertFile: "c", KeyFile: "k", ServerName: "r"}), nil},
		{"waited", redisstore.Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond, ReadTimeout: time.Second}, nil},
		{"longest timeout", redisstore.Options{DialTimeout: redisstore.MaxTimeout}, nil},

		{"empty entry in addrs", redisstore.Options{Addrs: []string{"r:1", ""}}, []string{"addrs"}},
		{"brace in prefix", redisstore.Options{Prefix: "app{1}:"}, []string{"prefix"}},
		{"negative db", redisstore.Options{DB: -1}, []string{"db"}},
		{"db in a cluster", redisstore.Options{Addrs: []string{"r:1", "r:2"}, DB: 2}, []string{"db"}},
		{"db in a cluster, addr first", redisstore.Options{Addr: "r:1", Addrs: []string{"r:2"}, DB: 2}, []string{"db"}},
		{"negative dial timeout", redisstore.Options{DialTimeout: -time.Second}, []string{"dial_timeout"}},
		{"negative read timeout", redisstore.Options{ReadTimeout: -time.Second}, []string{"read_timeout"}},
		{"long write timeout", redisstore.Options{WriteTimeout: redisstore.MaxTimeout + 1}, []string{"write_timeout"}},
		{"negative pool", redisstore.Options{PoolSize: -1}, []string{"pool_size"}},
		{"negative wait replicas", redisstore.Options{WaitReplicas: -1}, []string{"wait_replicas"}},
		{"negative wait timeout", redisstore.Options{WaitReplicas: 1, WaitTimeout: -time.Second}, []string{"wait_timeout"}},
		{"long wait timeout", redisstore.Options{WaitReplicas: 1, WaitTimeout: 100000 * time.Hour}, []string{"wait_timeout"}},
		{"wait timeout alone", redisstore.Options{WaitTimeout: time.Second}, []string{"wait_timeout"}},
		{"wait as long as a read", redisstore.Options{WaitReplicas: 1, WaitTimeout: time.Second, ReadTimeout: time.Second}, []string{"wait_timeout"}},
		{"wait longer than the default read", redisstore.Options{WaitReplicas: 1, WaitTimeout: 5 * time.Second}, []string{"wait_timeout"}},
		{"wait under a ms", redisstore.Options{WaitReplicas: 1, WaitTimeout: time.Microsecond}, []string{"wait_timeout"}},
		{"read too short for the default wait", redisstore.Options{WaitReplicas: 1, ReadTimeout: time.Millisecond}, []string{"read_timeout"}},
		{"tls settings, no tls", tls(redisstore.TLSOptions{CAFile: "ca.pem"}), []string{"tls"}},
		{"tls skip verify alone", tls(redisstore.TLSOptions{InsecureSkipVerify: true}), []string{"tls"}},
		{"tls cert without key", tls(redisstore.TLSOptions{Enabled: true, CertFile: "c.pem"}), []string{"tls.cert_file"}},
		{"tls key without cert", tls(redisstore.TLSOptions{Enabled: true, KeyFile: "k.pem"}), []string{"tls.key_file"}},
		{"tls off, half a cert", tls(redisstore.TLSOptions{KeyFile: "k.pem"}), []string{"tls", "tls.key_file"}},
		{"every problem", redisstore.Options{Addrs: []string{""}, Prefix: "{", DB: -1, PoolSize: -1, WaitTimeout: time.Second},
			[]string{"addrs", "db", "pool_size", "prefix", "wait_timeout"}},
	} {
		err := c.o.Validate()
		if got := keysOf(err); !reflect.DeepEqual(got, c.keys) {
			t.Errorf("%s: keys %q (%v), want %q", c.name, got, err, c.keys)
		}
		for _, e := range optkey.All(err) {
			if !strings.HasPrefix(err.Error(), strings.Join(e.Key, ".")+": ") && !strings.Contains(err.Error(), "\n"+strings.Join(e.Key, ".")+": ") {
				t.Errorf("%s: %q does not start a line with its key %q", c.name, err, e.Key)
			}
		}
	}
}

// TestOptionsYAML: the store.redis block of a configuration decodes into
// Options key for key, durations as Go writes them, and encodes back to the
// same Options.
func TestOptionsYAML(t *testing.T) {
	const block = `
addr: r1:6379
addrs: [r2:6379, r3:6379]
master_name: main
username: app
password: s3cret
db: 2
tls:
  ca_file: ca.pem
  cert_file: client.pem
  key_file: client.key
  server_name: redis.internal
  insecure_skip_verify: true
prefix: "app:"
dial_timeout: 5s
read_timeout: 1500ms
write_timeout: 2s
pool_size: 20
wait_replicas: 1
wait_timeout: 250ms
`
	want := redisstore.Options{
		Addr: "r1:6379", Addrs: []string{"r2:6379", "r3:6379"}, MasterName: "main", Username: "app", Password: "s3cret", DB: 2,
		TLS: redisstore.TLSOptions{Enabled: true, CAFile: "ca.pem", CertFile: "client.pem", KeyFile: "client.key",
			ServerName: "redis.internal", InsecureSkipVerify: true},
		Prefix: "app:", DialTimeout: 5 * time.Second, ReadTimeout: 1500 * time.Millisecond, WriteTimeout: 2 * time.Second,
		PoolSize: 20, WaitReplicas: 1, WaitTimeout: 250 * time.Millisecond,
	}
	got := decode(t, block)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the decoded block is refused: %v", err)
	}
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if again := decode(t, string(out)); !reflect.DeepEqual(again, want) {
		t.Errorf("encoded as\n%s\ndecoded again as %+v", out, again)
	}
}

// TestTLSYAML: tls is a boolean or a mapping, which turns TLS on unless it
// says otherwise.
func TestTLSYAML(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want redisstore.TLSOptions
	}{
		{"tls: true", redisstore.TLSOptions{Enabled: true}},
		{"tls: false", redisstore.TLSOptions{}},
		{"tls:", redisstore.TLSOptions{}},
		{"tls: {}", redisstore.TLSOptions{Enabled: true}},
		{"tls: {ca_file: ca.pem}", redisstore.TLSOptions{Enabled: true, CAFile: "ca.pem"}},
		{"tls: {enabled: false, server_name: r}", redisstore.TLSOptions{ServerName: "r"}},
		{"t: &t true\ntls: *t", redisstore.TLSOptions{Enabled: true}},
		{"tls: 'true'", redisstore.TLSOptions{Enabled: true}}, // as tls: "${REDIS_TLS}" expands
		{"tls: \"0\"", redisstore.TLSOptions{}},
	} {
		var o struct {
			TLS redisstore.TLSOptions `yaml:"tls"`
			T   any                   `yaml:"t"`
		}
		if err := yaml.Unmarshal([]byte(c.doc), &o); err != nil || o.TLS != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.doc, o.TLS, err, c.want)
		}
	}
	for _, doc := range []string{"tls: maybe", "tls: [a]", "tls: 2", "tls: yes"} {
		var o redisstore.Options
		err := yaml.Unmarshal([]byte("\n"+doc), &o)
		if err == nil || !strings.Contains(err.Error(), "line 2: want true, false or a mapping") {
			t.Errorf("%q: %v, want an error saying what tls may be, on line 2", doc, err)
		}
	}
}

// TestDurationYAML: go-yaml reads a duration written as Go writes one, and
// refuses anything else with an error naming the line and the value.
func TestDurationYAML(t *testing.T) {
	var o redisstore.Options
	if err := yaml.Unmarshal([]byte("read_timeout: 2m30s\ndial_timeout: -1s"), &o); err != nil ||
		o.ReadTimeout != 150*time.Second || o.DialTimeout != -time.Second {
		t.Errorf("2m30s and -1s: %v, %v, %v", o.ReadTimeout, o.DialTimeout, err)
	}
	if err := o.Validate(); !reflect.DeepEqual(keysOf(err), []string{"dial_timeout"}) {
		t.Errorf("a negative duration decoded: Validate says %v, want dial_timeout", err)
	}
	for _, c := range []struct{ doc, want string }{
		{"\nread_timeout: 5x", "line 2: cannot unmarshal !!str `5x` into time.Duration"},
		{"\nread_timeout: 5", "line 2: cannot unmarshal !!int `5` into time.Duration"},
		{"\nread_timeout: 3000000h", "line 2: cannot unmarshal !!str `3000000h` into time.Duration"},
		{"\nread_timeout: 30000000000h", "line 2: cannot unmarshal !!str `3000000...` into time.Duration"},
	} {
		err := yaml.Unmarshal([]byte(c.doc), new(redisstore.Options))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.doc, err, c.want)
		}
	}
}

func decode(t *testing.T, doc string) redisstore.Options {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var o redisstore.Options
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("decode:\n%s\n%v", doc, err)
	}
	return o
}
