package fence_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotcron/slotcron/fence"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := fence.Register(reg); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	// A different collector with the same name is a conflict, not a no-op.
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slotcron_fence_rejections_total", Help: "x"}, []string{"job"})
	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(other)
	if err := fence.Register(reg2); err == nil {
		t.Fatal("register over a conflicting collector: no error")
	}
}
