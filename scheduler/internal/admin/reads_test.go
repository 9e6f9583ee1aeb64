package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// spyKey marks the context of a request whose store calls spyStore
// watches: the engine's own calls, on the same store, are let through.
type spyKey struct{}

func spied(ctx context.Context) context.Context { return context.WithValue(ctx, spyKey{}, true) }

// spyStore lists the reads of the watched requests and counts how many are
// in flight at once. While hold is set, each such read of one job's history
// waits for it to be closed, or for its request's context to end.
type spyStore struct {
	slotstore.Store
	mu        sync.Mutex
	calls     []string
	now, most int
	hold      chan struct{}
	// unbounded lists the reads whose context had no deadline.
	unbounded []string
	// fail, when set, is the error of every watched read.
	fail error
}

// enter notes a read, of one job's history if job is set; leave must be
// called when it ends.
func (s *spyStore) enter(ctx context.Context, call, job string) (leave func(), err error) {
	if ctx.Value(spyKey{}) == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	if _, ok := ctx.Deadline(); !ok {
		s.unbounded = append(s.unbounded, call)
	}
	s.calls = append(s.calls, call)
	s.now++
	s.most = max(s.most, s.now)
	hold, fail := s.hold, s.fail
	s.mu.Unlock()
	leave = func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}
	if fail != nil {
		leave()
		return nil, fail
	}
	if hold == nil || job == "" {
		// Long enough for the reads of concurrent requests to overlap.
		time.Sleep(2 * time.Millisecond)
		return leave, nil
	}
	select {
	case <-hold:
		return leave, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

func (s *spyStore) History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error) {
	leave, err := s.enter(ctx, fmt.Sprintf("History job=%s state=%s", p.Job, p.State), p.Job)
	if err != nil {
		return nil, err
	}
	defer leave()
	return s.Store.History(ctx, p)
}

func (s *spyStore) Pauses(ctx context.Context) (slotstore.Pauses, error) {
	leave, err := s.enter(ctx, "Pauses", "")
	if err != nil {
		return slotstore.Pauses{}, err
	}
	defer leave()
	return s.Store.Pauses(ctx)
}

func (s *spyStore) Replicas(ctx context.Context) ([]slotstore.Replica, error) {
	leave, err := s.enter(ctx, "Replicas", "")
	if err != nil {
		return nil, err
	}
	defer leave()
	return s.Store.Replicas(ctx)
}

// reset returns the reads listed and the most at once since the last
// reset, and forgets them.
func (s *spyStore) reset() (calls []string, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls, most = s.calls, s.most
	s.calls, s.most = nil, 0
	return calls, most
}

func (s *spyStore) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// serve sends a request with ctx, watched by the spyStore, with the
// bearer token.
func (r *rig) serve(ctx context.Context, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(spied(ctx), method, target, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	r.api.ServeHTTP(rec, req)
	return rec
}

// newSpyRig runs n jobs (job-000...), and more, on a spyStore.
func newSpyRig(t *testing.T, n int, more ...engine.JobSpec) (*rig, *spyStore) {
	specs := more
	for i := range n {
		specs = append(specs, spec(t, fmt.Sprintf("job-%03d", i), never, ""))
	}
	var sp *spyStore
	r := newRig(t, rigConfig{jobs: specs, store: func(st slotstore.Store) slotstore.Store {
		sp = &spyStore{Store: st}
		return sp
	}})
	return r, sp
}

// The store's health, in /readyz and in the cluster view, is one small
// read whatever the number of jobs: the pauses, never a read of every
// job's history.
func TestStoreHealthIsOneSmallRead(t *testing.T) {
	r, sp := newSpyRig(t, 3)
	sp.reset()
	rec := r.serve(t.Context(), "GET", "/readyz")
	calls, _ := sp.reset()
	if rec.Code != http.StatusOK || strings.Join(calls, ", ") != "Pauses" {
		t.Errorf("GET /readyz: %d %q, reading %q; want 200 from one read of the pauses", rec.Code, rec.Body.String(), calls)
	}
	rec = r.serve(t.Context(), "GET", "/api/cluster")
	calls, _ = sp.reset()
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/cluster: %d %s", rec.Code, rec.Body.String())
	}
	for _, c := range calls {
		// A store-wide read with no state asks every job for its newest
		// marker (on Redis, a command a job).
		if strings.HasPrefix(c, "History job= state= ") || c == "History job= state=" {
			t.Errorf("GET /api/cluster reads %q, a read of every job", c)
		}
	}
	if strings.Count(strings.Join(calls, "\n"), "Pauses") != 1 {
		t.Errorf("GET /api/cluster reads %q, want the pauses once", calls)
	}
}

// However many requests read at once, no more than maxReads store reads
// are in flight; a request whose client goes away while it waits for a
// place stops waiting, having read nothing.
func TestSharedReadBound(t *testing.T) {
	r, sp := newSpyRig(t, 40)
	sp.reset()
	var wg sync.WaitGroup
	codes := make([]int, 12)
	for i := range codes {
		wg.Go(func() { codes[i] = r.serve(t.Context(), "GET", "/api/jobs?limit=20").Code })
	}
	wg.Wait()
	calls, most := sp.reset()
	t.Logf("%d concurrent pages of 20 jobs: %d reads, at most %d at once", len(codes), len(calls), most)
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("request %d: %d", i, c)
		}
	}
	if most > maxReads {
		t.Errorf("%d reads in flight at once, want at most %d", most, maxReads)
	}

	// A page holds every place; a request that comes meanwhile waits
	// until its client gives up.
	sp.mu.Lock()
	sp.hold = make(chan struct{})
	sp.mu.Unlock()
	bg, stop := context.WithCancel(t.Context())
	done := make(chan int)
	go func() { done <- r.serve(bg, "GET", "/api/jobs?limit=20").Code }()
	poll.Until(t, 10*time.Second, fmt.Sprintf("%d reads in flight", maxReads), func() error {
		if n := sp.inFlight(); n < maxReads {
			return fmt.Errorf("%d in flight", n)
		}
		return nil
	})
	sp.reset()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	rec := r.serve(ctx, "GET", "/api/jobs/job-001/history")
	cancel()
	calls, _ = sp.reset()
	wantError(t, "a history waiting while every place is taken", rec.Code, rec.Body.String(), http.StatusServiceUnavailable, codeStore,
		"waiting to read the store", context.DeadlineExceeded.Error())
	if len(calls) != 0 || sp.inFlight() != maxReads {
		t.Errorf("a request that never had a place read %q; %d in flight, want %d", calls, sp.inFlight(), maxReads)
	}
	stop()
	if code := <-done; code != http.StatusServiceUnavailable {
		t.Errorf("the page whose client went away: %d, want 503", code)
	}
	close(sp.hold)
}

// Every read a request makes ends within a deadline: the history of every
// job and a backfill's plan too.
func TestEveryReadHasADeadline(t *testing.T) {
	r, sp := newSpyRig(t, 2, spec(t, "hourly", "0 * * * *", ""))
	now := time.Now().UTC()
	for _, target := range []string{
		"GET /api/jobs", "GET /api/jobs/hourly", "GET /api/jobs/hourly/history", "GET /api/jobs/hourly/history?outcome=failed",
		"GET /api/history", "GET /api/history?job=hourly&state=done", "GET /api/cluster", "GET /readyz",
		"POST /api/jobs/hourly/backfill?dry_run=true&from=" + now.Add(-3*time.Hour).Format(time.RFC3339) + "&to=" + now.Add(-2*time.Hour).Format(time.RFC3339),
	} {
		sp.mu.Lock()
		sp.unbounded = nil
		sp.mu.Unlock()
		method, path, _ := strings.Cut(target, " ")
		rec := r.serve(t.Context(), method, path)
		calls, _ := sp.reset()
		sp.mu.Lock()
		unbounded := sp.unbounded
		sp.mu.Unlock()
		if rec.Code != http.StatusOK || len(calls) == 0 || len(unbounded) != 0 {
			t.Errorf("%s: %d %.200s; reads %q, of which with no deadline %q", target, rec.Code, rec.Body.String(), calls, unbounded)
		}
	}
}

// storeCalls is an engine that lists the failed store calls the API
// records for slotcron_store_up.
type storeCalls struct {
	Engine
	mu     sync.Mutex
	failed []string
}

func (e *storeCalls) StoreCall(err error) {
	if err != nil {
		e.mu.Lock()
		e.failed = append(e.failed, err.Error())
		e.mu.Unlock()
	}
	e.Engine.StoreCall(err)
}

func (e *storeCalls) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.failed
	e.failed = nil
	return out
}

// slotcron_store_up falls for the store's own failures only: not for a
// request the store refuses as invalid (a 400), nor for one whose client
// went away or whose reads ran out of time while the store worked.
func TestStoreUpOnlyForTheStoresFailures(t *testing.T) {
	r, sp := newSpyRig(t, 1)
	sc := &storeCalls{Engine: r.e}
	r.api = Handler(sc, Options{Token: "s3cret"})

	// Not text: the store refuses it.
	rec := r.serve(t.Context(), "POST", "/api/pause?job=job-000&reason=%ff")
	wantError(t, "a reason that is not UTF-8", rec.Code, rec.Body.String(), http.StatusBadRequest, codeBadRequest, "invalid")
	if f := sc.take(); len(f) != 0 {
		t.Errorf("a request the store refused as invalid recorded the store failing: %q", f)
	}

	// A read in progress when its client goes away, or when the
	// request's time runs out.
	sp.mu.Lock()
	sp.hold = make(chan struct{})
	sp.mu.Unlock()
	defer close(sp.hold)
	gone, leave := context.WithCancel(t.Context())
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- r.serve(gone, "GET", "/api/jobs/job-000/history") }()
	poll.Until(t, 10*time.Second, "the history read to begin", func() error {
		if sp.inFlight() == 0 {
			return errors.New("no read in flight")
		}
		return nil
	})
	leave()
	rec = <-done
	wantError(t, "a history whose client went away", rec.Code, rec.Body.String(), http.StatusServiceUnavailable, codeStore, context.Canceled.Error())
	late, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	rec = r.serve(late, "GET", "/api/jobs")
	wantError(t, "a jobs page out of time", rec.Code, rec.Body.String(), http.StatusServiceUnavailable, codeStore, context.DeadlineExceeded.Error())
	if f := sc.take(); len(f) != 0 {
		t.Errorf("requests whose context ended recorded the store failing: %q", f)
	}

	// The store's own failure is recorded.
	sp.mu.Lock()
	sp.fail = errDown
	sp.mu.Unlock()
	for _, target := range []string{"/api/jobs/job-000/history", "/api/jobs", "/api/history", "/api/cluster", "/readyz"} {
		if rec := r.serve(t.Context(), "GET", target); rec.Code == http.StatusOK && target != "/api/cluster" {
			t.Errorf("GET %s with the store down: %d", target, rec.Code)
		}
		if f := sc.take(); len(f) == 0 || !strings.Contains(f[0], errDown.Error()) {
			t.Errorf("GET %s with the store down recorded %q, want its failure", target, f)
		}
	}
}
