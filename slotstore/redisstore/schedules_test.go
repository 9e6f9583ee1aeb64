package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/redisstore"
)

// puts is a batch of n puts of schedules <prefix><from>..., running job.
func puts(prefix string, from, n int, job, fp string) []slotstore.ScheduleWrite {
	ws := make([]slotstore.ScheduleWrite, n)
	for i := range ws {
		ws[i] = slotstore.ScheduleWrite{ID: fmt.Sprintf("%s%07d", prefix, from+i), Run: job,
			Spec: slotstore.Spec{Fingerprint: fp, Body: []byte(`{"cron":"* * * * *"}`)}, IfVersion: slotstore.AnyVersion}
	}
	return ws
}

func write(t testing.TB, s slotstore.Store, ws []slotstore.ScheduleWrite) []slotstore.ScheduleResult {
	t.Helper()
	res, err := s.WriteSchedules(t.Context(), slotstore.WriteSchedulesParams{By: "api", Writes: ws})
	if err != nil {
		t.Fatalf("write %d schedules: %v", len(ws), err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("write %d: %v", i, r.Err)
		}
	}
	return res
}

// TestScheduleRoundTrips: on a single server a batch of 1,000 writes is
// one script call, indexes and counter included; a page of schedules by
// run job or prefix is one ZRANGEBYLEX and one script call, whatever the
// number of schedules; the changes when nothing changed are one
// MULTI/EXEC that runs no script.
func TestScheduleRoundTrips(t *testing.T) {
	r := testserver.StartRedis(t)
	client := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	hook := &roundTrips{}
	client.AddHook(hook)
	s, err := redisstore.New(client, redisstore.Options{Prefix: "srt:"})
	if err != nil {
		t.Fatal(err)
	}
	stats := newCommandStats(t, r.Addr())
	ctx := t.Context()
	write(t, s, puts("warm-", 0, 1, "a", "p"))
	if _, err := s.Schedules(ctx, slotstore.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScheduleChanges(ctx, slotstore.ChangesParams{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		write(t, s, puts("a-", i*1000, 1000, "a", "p"))
		write(t, s, puts("b-", i*1000, 1000, "b", "p"))
	}
	var head int64
	ops := []struct {
		name     string
		op       func() error
		trips    int
		evalsha  int
		commands []string // commands that must have run once, besides EVALSHA
	}{
		{"write of 1,000 schedules", func() error {
			res, err := s.WriteSchedules(ctx, slotstore.WriteSchedulesParams{By: "api", Writes: puts("c-", 0, 1000, "c", "p")})
			if err == nil {
				head = res[999].Entry.Seq
			}
			return err
		}, 1, 1, nil},
		{"page of 100 by run job", func() error {
			got, err := s.Schedules(ctx, slotstore.ScheduleParams{Run: "b", After: "b-0002000", Limit: 100})
			if err == nil && (len(got) != 100 || got[0].Job != "b-0002001" || got[0].Run != "b") {
				return fmt.Errorf("page by run job: %d schedules from %+v", len(got), got[0])
			}
			return err
		}, 2, 1, []string{"zrangebylex"}},
		{"page of 100 by prefix", func() error {
			got, err := s.Schedules(ctx, slotstore.ScheduleParams{Prefix: "a-00030", Limit: 100})
			if err == nil && (len(got) != 100 || got[0].Job != "a-0003000" || got[99].Job != "a-0003099") {
				return fmt.Errorf("page by prefix: %d schedules", len(got))
			}
			return err
		}, 2, 1, []string{"zrangebylex"}},
		{"changes when nothing changed", func() error {
			c, err := s.ScheduleChanges(ctx, slotstore.ChangesParams{After: head})
			if err == nil && (c.Head != head || len(c.Entries) != 0) {
				return fmt.Errorf("changes after the head %d: %+v", head, c)
			}
			return err
		}, 1, 0, []string{"multi", "zrangebyscore", "get", "exec"}},
	}
	for _, o := range ops {
		before := hook.n.Load()
		var err error
		got := stats.count(func() { err = o.op() })
		mustDo(t, err)
		trips := hook.n.Load() - before
		if got["evalsha"] != o.evalsha || got["eval"] != 0 || trips != int64(o.trips) {
			t.Errorf("%s: %d round trips, commands %v; want %d, %d EVALSHA", o.name, trips, got, o.trips, o.evalsha)
		}
		for _, c := range o.commands {
			if got[c] != 1 {
				t.Errorf("%s: commands %v, want one %s", o.name, got, c)
			}
		}
		t.Logf("%s: %d round trips; commands run (scripts' included) %v", o.name, trips, got)
	}
}

// TestScheduleChangesAfterRestart: Redis restarted empty lost the
// schedules and the counter, so the head falls below a reader's cursor,
// which is how the reader tells; a watch resumes by itself once the server
// is back.
func TestScheduleChangesAfterRestart(t *testing.T) {
	r := testserver.StartRedis(t)
	s := openWith(t, redisstore.Options{Addrs: []string{r.Addr()}, DialTimeout: time.Second, ReadTimeout: time.Second})
	ch := s.WatchSchedules(t.Context())
	res := write(t, s, puts("r-", 0, 3, "j", "p"))
	cursor := res[2].Entry.Seq
	if c, err := s.ScheduleChanges(t.Context(), slotstore.ChangesParams{}); err != nil || c.Head != cursor || len(c.Entries) != 3 {
		t.Fatalf("changes before the restart: %+v, %v", c, err)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case <-ch: // the notice of the writes before the restart
	default:
		t.Fatal("no notice of the writes before the restart")
	}
	r.Restart(t)
	var c slotstore.Changes
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: cursor}); err != nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		c, err = s.ScheduleChanges(t.Context(), slotstore.ChangesParams{After: cursor})
	}
	if err != nil || c.Head >= cursor || len(c.Entries) != 0 {
		t.Fatalf("changes after an empty restart: %+v, %v; want a head below the cursor %d", c, err, cursor)
	}
	for i := 0; ; i++ {
		write(t, s, puts("after-", i, 1, "j", "p"))
		select {
		case _, open := <-ch:
			if !open {
				t.Fatal("the watch closed while its context lives")
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no notice after the restart: the watch did not resubscribe")
		}
	}
}

// BenchmarkWriteSchedules1000 puts batches of 1,000 new schedules, of ten
// run jobs, on a private server and reports schedules written per second,
// then reads a page of 100 by run job and by prefix from what it wrote
// and reports how long each took.
func BenchmarkWriteSchedules1000(b *testing.B) {
	r := testserver.StartRedis(b)
	s := openWith(b, redisstore.Options{Addrs: []string{r.Addr()}})
	written := 0
	for b.Loop() {
		ws := puts("s-", written, 1000, fmt.Sprintf("job-%d", written/1000%10), "p")
		write(b, s, ws)
		written += len(ws)
	}
	b.ReportMetric(float64(written)/b.Elapsed().Seconds(), "schedules/s")
	for _, q := range []struct {
		unit string
		p    slotstore.ScheduleParams
	}{
		{"ms/page-by-run", slotstore.ScheduleParams{Run: "job-0", After: "s-", Limit: 100}},
		{"ms/page-by-prefix", slotstore.ScheduleParams{Prefix: fmt.Sprintf("s-%05d", written/2/100), Limit: 100}},
	} {
		start := time.Now()
		got, err := s.Schedules(b.Context(), q.p)
		if err != nil || len(got) == 0 {
			b.Fatalf("schedules %+v: %d, %v", q.p, len(got), err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, q.unit)
	}
}
