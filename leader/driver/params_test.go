package driver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/driver"
	"github.com/slotcron/slotcron/leader/internal/fakedriver"
)

// Lead refuses bad Params with ErrInvalid, and accepts the limits that
// leader.Params documents: a 50 ms lease, a margin just under half of it.
func TestParams(t *testing.T) {
	e := driver.NewElector(fakedriver.New().Driver(), quiet)
	ok := leader.Params{Name: "n", Replica: "r", Lease: time.Second}
	for name, edit := range map[string]func(*leader.Params){
		"empty name":      func(p *leader.Params) { p.Name = "" },
		"empty replica":   func(p *leader.Params) { p.Replica = "" },
		"short lease":     func(p *leader.Params) { p.Lease = 50*time.Millisecond - 1 },
		"margin too wide": func(p *leader.Params) { p.Margin = p.Lease / 2 },
		"negative margin": func(p *leader.Params) { p.Margin = -1 },
		"negative cool":   func(p *leader.Params) { p.Cooldown = -1 },
	} {
		p := ok
		edit(&p)
		if err := e.Lead(t.Context(), p, nil); !errors.Is(err, leader.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// A cancelled context: Lead validates, then returns without campaigning.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for name, p := range map[string]leader.Params{
		"shortest lease": {Name: "n", Replica: "r", Lease: 50 * time.Millisecond},
		"widest margin":  {Name: "n", Replica: "r", Lease: time.Second, Margin: time.Second/2 - 1},
	} {
		if err := e.Lead(done, p, nil); err != nil {
			t.Errorf("%s: %v, want it accepted", name, err)
		}
	}
}
