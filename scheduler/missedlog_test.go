package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// After an outage, the slots nobody ran are logged once in the cluster, by
// the replica whose skip recorded them, and a burst as one line: three
// replicas coming up used to log every slot three times.
func TestMissedSlotsLoggedOncePerCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.Options{})
		reg := jobs.NewRegistry()
		reg.Register("tick", func(context.Context, jobs.Run) error { return nil })
		conf := `jobs: {tick: {schedule: "@every 10s", starting_deadline: 5s, catch_up: none}}`
		stop := start(t, replica(t, st, "a", conf, reg))
		time.Sleep(time.Minute)
		stop()
		time.Sleep(2 * time.Minute) // nobody runs it: about 12 slots

		var buf testlog.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		var stops []func()
		for _, name := range []string{"a", "b", "c"} {
			stops = append(stops, start(t, replica(t, st, name, conf, reg, WithLogger(logger))))
		}
		time.Sleep(time.Second)
		for _, stop := range stops {
			stop()
		}

		var recorded []time.Time
		for _, m := range history(t, st, "tick") {
			if m.State == slotstore.StateSkipped && strings.HasPrefix(m.Reason, "missed") {
				recorded = append(recorded, m.Slot)
			}
		}
		logged, lines := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var l struct {
				Msg   string
				Count int
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			switch l.Msg {
			case "slot missed":
				logged++
				lines++
			case "slots missed":
				logged += l.Count
				lines++
			}
		}
		if len(recorded) < 10 {
			t.Fatalf("%d slots recorded missed; the test needs an outage of about 12", len(recorded))
		}
		if logged != len(recorded) || lines > 3 {
			t.Errorf("%d slots recorded missed, %d logged in %d lines by three replicas; want each once, a burst in a line",
				len(recorded), logged, lines)
		}
	})
}
