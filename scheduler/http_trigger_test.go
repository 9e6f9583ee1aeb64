package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// call makes one request to the API and returns its status and body; it
// retries while the server is not listening yet.
func call(t *testing.T, method, url, auth string) (int, string) {
	t.Helper()
	var resp *http.Response
	poll.Until(t, 10*time.Second, fmt.Sprintf("an answer to %s %s", method, url), func() error {
		req, _ := http.NewRequest(method, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		var err error
		resp, err = http.DefaultClient.Do(req)
		return err
	})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// Concurrent triggers of one job, on two replicas, each get a slot of their
// own (or a 4xx saying why): never a 5xx for a client race.
func TestConcurrentTriggers(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on ports")
	}
	const n = 20
	st := memstore.New(memstore.Options{})
	var mu sync.Mutex
	keys := map[string]int{}
	reg := jobs.NewRegistry()
	reg.Register("report", func(_ context.Context, run jobs.Run) error {
		mu.Lock()
		keys[run.Key()]++
		mu.Unlock()
		return nil
	})
	var bases []string
	for _, name := range []string{"a", "b"} {
		addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
		stop := start(t, replica(t, st, name, "http: {listen: \""+addr+"\", token: s3cret}\njobs: {report: {schedule: '@daily', catch_up: none}}", reg))
		defer stop()
		bases = append(bases, "http://"+addr)
		call(t, "GET", "http://"+addr+"/readyz", "") // listening
	}
	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code, body := call(t, "POST", bases[i%2]+"/api/jobs/report/trigger", "Bearer s3cret")
			answers <- answer{code, body}
		})
	}
	wg.Wait()
	close(answers)
	accepted := 0
	for a := range answers {
		switch {
		case a.code >= 500:
			t.Errorf("trigger answered %d %s", a.code, a.body)
		case a.code == http.StatusAccepted:
			accepted++
		default:
			var e struct{ Error, Code string }
			if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Code == "" || e.Error == "" {
				t.Errorf("trigger answered %d %s: want an error body with a code", a.code, a.body)
			}
		}
	}
	poll.Until(t, 10*time.Second, "every accepted trigger's run", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(keys) != accepted {
			return fmt.Errorf("%d runs of %d triggers accepted", len(keys), accepted)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for k, runs := range keys {
		if runs != 1 {
			t.Errorf("%s ran %d times", k, runs)
		}
	}
	t.Logf("%d concurrent triggers on two replicas: %d accepted, each its own slot", n, accepted)
	if accepted != n {
		t.Errorf("%d of %d triggers accepted; with a daily job every one has a free second", accepted, n)
	}
}

// Errors are {"error", "code"}; a bad state filter is the client's error;
// the Bearer scheme is case-insensitive; pause answers in the API's style.
func TestAPIErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	reg := jobs.NewRegistry()
	reg.Register("report", func(context.Context, jobs.Run) error { return nil })
	stop := start(t, replica(t, memstore.New(memstore.Options{}), "a", "http: {listen: \""+addr+"\", token: s3cret}\njobs: {report: {schedule: '@daily', catch_up: none}}", reg))
	defer stop()
	base := "http://" + addr
	for _, c := range []struct {
		method, path, auth string
		code               int
		body               string
	}{
		{"GET", "/api/history?state=bogus", "", 400, `"code":"bad_request"`},
		{"GET", "/api/history?limit=0", "", 400, `"code":"bad_request"`},
		{"POST", "/api/jobs/nope/trigger", "Bearer s3cret", 404, `"code":"no_such_job"`},
		{"POST", "/api/pause?job=report", "bearer s3cret", 400, `"code":"bad_request"`},
		{"POST", "/api/pause?job=report&reason=test", "bearer s3cret", 200, `{"all":false,"jobs":["report"],"was_paused":false}`},
		{"POST", "/api/jobs/report/trigger", "BEARER s3cret", 409, `"code":"paused"`},
		{"POST", "/api/resume?job=report", "Bearer wrong", 401, `"code":"unauthorized"`},
		{"POST", "/api/resume?job=report", "s3cret", 401, `"code":"unauthorized"`},
	} {
		code, body := call(t, c.method, base+c.path, c.auth)
		if code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s %s (%q): %d %s, want %d with %s", c.method, c.path, c.auth, code, body, c.code, c.body)
		}
	}
}
