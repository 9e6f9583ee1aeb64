package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

func nop(context.Context, jobs.Run) error { return nil }

func TestRegistry(t *testing.T) {
	reg := jobs.NewRegistry()
	if err := reg.RegisterSafely("b", nop); err != nil {
		t.Fatal(err)
	}
	reg.Register("a", nop)
	if err := reg.RegisterSafely("a", nop); !errors.Is(err, jobs.ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	if err := reg.RegisterSafely("", nop); !errors.Is(err, jobs.ErrEmptyName) {
		t.Errorf("empty: %v", err)
	}
	if err := reg.RegisterSafely("c", nil); err == nil {
		t.Error("nil func accepted")
	}
	if _, ok := reg.Lookup("a"); !ok {
		t.Error("a not found")
	}
	if _, ok := reg.Lookup("c"); ok {
		t.Error("c found")
	}
	if got := strings.Join(reg.Names(), ","); got != "a,b" {
		t.Errorf("names %q", got)
	}
}

func TestRegisterPanics(t *testing.T) {
	for _, name := range []string{"", "dup"} {
		reg := jobs.NewRegistry()
		reg.Register("dup", nop)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			reg.Register(name, nop)
		}()
	}
}

func TestRunParams(t *testing.T) {
	type params struct {
		Region string        `yaml:"region"`
		Every  time.Duration `yaml:"every"`
	}
	run := jobs.Run{Job: "refresh"}.WithParams([]byte("region: eu\nevery: 30s\n"))
	var p params
	if err := run.Params(&p); err != nil {
		t.Fatal(err)
	}
	if p.Region != "eu" || p.Every != 30*time.Second {
		t.Errorf("params %+v", p)
	}
	bad := jobs.Run{Job: "refresh"}.WithParams([]byte("regoin: eu\n"))
	if err := bad.Params(&p); err == nil || !strings.Contains(err.Error(), "regoin") || !strings.Contains(err.Error(), "refresh") {
		t.Errorf("misspelt param: %v", err)
	}
	none := params{Region: "keep"}
	if err := (jobs.Run{Job: "x"}).Params(&none); err != nil || none.Region != "keep" {
		t.Errorf("no params: %v %+v", err, none)
	}
}

func TestRunKeyIsUTC(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	run := jobs.Run{Job: "invoices", Slot: time.Date(2026, 11, 29, 3, 0, 0, 0, berlin)}
	if got := run.Key(); got != "invoices@2026-11-29T02:00:00Z" {
		t.Errorf("key %q", got)
	}
}

func TestRegisterDuty(t *testing.T) {
	reg := jobs.NewRegistry()
	duty := func(context.Context, jobs.Duty) error { return nil }
	reg.RegisterDuty("fanout", duty)
	reg.Register("fanout", nop) // jobs and duties have separate names
	if err := reg.RegisterDutySafely("fanout", duty); !errors.Is(err, jobs.ErrDuplicate) {
		t.Errorf("duplicate duty: %v", err)
	}
	if err := reg.RegisterDutySafely("", duty); !errors.Is(err, jobs.ErrEmptyName) {
		t.Errorf("empty duty: %v", err)
	}
	if _, ok := reg.LookupDuty("fanout"); !ok || strings.Join(reg.DutyNames(), ",") != "fanout" {
		t.Errorf("lookup: %v names %v", ok, reg.DutyNames())
	}
	d := jobs.Duty{Name: "fanout", Fence: 3, Replica: "r1"}
	if got := len(d.Attrs()); got != 3 {
		t.Errorf("attrs %d", got)
	}
}

// TestRunWithStore: a Run carries the store its slot was claimed from, and
// WithStore leaves the Run it copies as it was.
func TestRunWithStore(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	r := jobs.Run{Job: "j", Slot: time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), Fence: 7}.WithParams([]byte("n: 1\n"))
	got := r.WithStore(st)
	if got.Store() != st {
		t.Errorf("Store() = %v, want the store given", got.Store())
	}
	if r.Store() != nil {
		t.Errorf("the original run's store: %v, want nil", r.Store())
	}
	var p struct{ N int }
	if err := got.Params(&p); err != nil || p.N != 1 || got.Key() != r.Key() || got.Fence != 7 {
		t.Errorf("WithStore lost the run's fields: %+v, params %+v, %v", got, p, err)
	}
}
