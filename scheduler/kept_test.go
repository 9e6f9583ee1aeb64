package scheduler

import (
	"testing"
	"time"
)

// What a Scheduler keeps of its configuration gives a schedule held as data
// the defaults the whole configuration would: the job named like its
// registered job if that job runs it, else the first by name that does.
func TestKeptConfigDefaultsSchedulesAsTheWholeOneWould(t *testing.T) {
	lease := func(s int) Policy { return Policy{Lease: Duration(time.Duration(s) * time.Second)} }
	c := &Config{Jobs: map[string]JobConfig{
		"report":  {Policy: lease(10)},               // runs report
		"b-clean": {Run: "clean", Policy: lease(20)}, // the first by name that runs clean
		"c-clean": {Run: "clean", Policy: lease(30)},
		"mail":    {Run: "notify", Policy: lease(40)}, // named mail, runs notify
		"notify2": {Run: "notify", Policy: lease(50)},
		"sync":    {Run: "report", Policy: lease(60)}, // runs report, but report is named for it
		"fetch":   {Run: "fetch", Policy: lease(70)},  // runs itself, named
		"zeta":    {Run: "mail", Policy: lease(80)},   // runs mail, while the job named mail runs notify
	}}
	k := c.kept()
	for _, run := range []string{"report", "clean", "notify", "fetch", "mail", "sync", "absent"} {
		want, wok := c.jobOfRun(run)
		got, gok := k.jobOfRun(run)
		if wok != gok || want.Lease != got.Lease {
			t.Errorf("run %s: kept gives %v, %v; the whole configuration %v, %v", run, got.Lease, gok, want.Lease, wok)
		}
	}
	if len(k.Jobs) >= len(c.Jobs) {
		t.Errorf("kept %d jobs of %d", len(k.Jobs), len(c.Jobs))
	}
}
