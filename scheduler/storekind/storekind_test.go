package storekind_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/scheduler"
	"github.com/slotcron/slotcron/scheduler/internal/backend"
	"github.com/slotcron/slotcron/scheduler/storekind"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// testOptions is the block of the test kind.
type testOptions struct {
	Name string        `yaml:"name"`
	Wait time.Duration `yaml:"wait"`
}

// opened records the options the test kind's Open was given.
var opened = make(chan testOptions, 1)

// errElector stands for an elector: the test only sees which kind made it.
var errElector = errors.New("the test kind's elector")

func init() {
	storekind.Register("test-kind", storekind.Kind[testOptions, *memstore.Store]{
		Open: func(_ context.Context, o testOptions) (*memstore.Store, error) {
			opened <- o
			return memstore.New(memstore.Options{}), nil
		},
		Check: func(o testOptions) error {
			if o.Name == "" {
				return optkey.Errorf("name", "is empty")
			}
			return nil
		},
		Elector: func(context.Context, *memstore.Store, *slog.Logger) (leader.Elector, error) { return nil, errElector },
	})
}

// A kind registered from outside the scheduler is configured by its own
// block, decoded into its Options as every other setting is read, checked
// with its errors placed at their keys, and opened with the options read.
func TestRegisteredKind(t *testing.T) {
	reg := jobs.NewRegistry()
	reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
	const conf = "store:\n  kind: test-kind\n  test-kind:\n    wait: 1m\njobs: {tick: {schedule: '@hourly'}}\n"
	cfg, err := scheduler.Parse("t.yaml", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(reg); err == nil || !strings.Contains(err.Error(), "t.yaml:3: store.test-kind.name: is empty") {
		t.Errorf("validate: %v, want the kind's check at its key", err)
	}
	for doc, want := range map[string]string{
		"store: {test-kind: {wait: 5x}}":  `t.yaml:1: store.test-kind.wait: invalid duration "5x"`,
		"store: {test-kind: {nmae: x}}":   `t.yaml:1: store.test-kind.nmae: unknown key (did you mean "name"?)`,
		"store: {test-kind: [x]}":         "t.yaml:1: store.test-kind: want a mapping of settings, not a list",
		"store: {kind: test-kind}\n":      "t.yaml:1: store.test-kind.name: is empty",
		"store: {kind: tset-kind}\n":      `unknown store kind "tset-kind" (sqlite, memory or test-kind)`,
		"store:\n  - kind: test-kind\n":   "t.yaml:2: store: want a mapping of settings",
		"store: {memory: {clock: x}}\n":   `t.yaml:1: store.memory: unknown key`,
		"store: {kind: etcd, etcd: {}}\n": `store kind "etcd" is not linked into this binary: import _ "github.com/slotcron/slotcron/scheduler/etcd"`,
	} {
		cfg, err := scheduler.Parse("t.yaml", []byte(doc))
		if err == nil {
			err = cfg.Validate(reg)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}

	cfg, err = scheduler.Parse("t.yaml", []byte("store: {kind: test-kind, test-kind: {name: a, wait: 1m}, redis: {no: check}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(reg); err != nil {
		t.Fatalf("validate: %v (a block of a kind not linked is not read)", err)
	}
	st, err := backend.Open(t.Context(), backend.Config{Kind: cfg.Store.Kind, Options: cfg.Store.Options})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if o := <-opened; o != (testOptions{Name: "a", Wait: time.Minute}) {
		t.Errorf("opened with %+v", o)
	}
	if _, _, err := backend.Elector(t.Context(), st, slog.New(slog.DiscardHandler)); !errors.Is(err, errElector) {
		t.Errorf("elector: %v, want the kind's", err)
	}
	// A store opened as the memory kind elects as that kind does, in the
	// slot store, though the test kind claims the same store type.
	mem, err := backend.Open(t.Context(), backend.Config{Kind: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	el, name, err := backend.KindElector(t.Context(), "memory", mem, slog.New(slog.DiscardHandler))
	if err != nil || name != "slot store" || el == nil {
		t.Errorf("memory kind's elector: %v %q %v, want the slot store's", el, name, err)
	}
}

// Register is static setup: a second kind of one name, a kind without a
// name or without Open is a programming error.
func TestRegisterPanics(t *testing.T) {
	open := func(context.Context, testOptions) (*memstore.Store, error) { return nil, nil }
	for name, register := range map[string]func(){
		"taken":   func() { storekind.Register("sqlite", storekind.Kind[testOptions, *memstore.Store]{Open: open}) },
		"no name": func() { storekind.Register("", storekind.Kind[testOptions, *memstore.Store]{Open: open}) },
		"no open": func() { storekind.Register("no-open", storekind.Kind[testOptions, *memstore.Store]{}) },
		"two electors on one store type": func() {
			storekind.Register("second", storekind.Kind[testOptions, *memstore.Store]{Open: open,
				Elector: func(context.Context, *memstore.Store, *slog.Logger) (leader.Elector, error) { return nil, nil }})
		},
		"options not a struct": func() {
			storekind.Register("pointer", storekind.Kind[*testOptions, *memstore.Store]{
				Open: func(context.Context, *testOptions) (*memstore.Store, error) { return nil, nil }})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			register()
		}()
	}
}
