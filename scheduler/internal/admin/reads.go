package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slotcron/slotcron/scheduler/internal/engine"
	"github.com/slotcron/slotcron/slotstore"
)

// maxReads bounds the store reads in flight for all the API's requests
// together, on top of each request's own bound (readers): however many
// dashboards are open, the engine's claims and renewals find the store's
// connections free.
const maxReads = 4

// reader is what the API's pages read.
type reader interface {
	History(ctx context.Context, p slotstore.HistoryParams) ([]slotstore.Marker, error)
	Pauses(ctx context.Context) (slotstore.Pauses, error)
	Replicas(ctx context.Context) ([]slotstore.Replica, error)
	Catalog(ctx context.Context, p slotstore.CatalogParams) ([]slotstore.CatalogEntry, error)
}

// boundedStore is the store as the API's requests read it: each History,
// Pauses, Replicas, Catalog or Audit call waits for one of the api's
// shared places first.
// The pause switch (SetPause) goes straight to the engine's records.
type boundedStore struct {
	r engine.Records
	a *api
}

var _ reader = (*boundedStore)(nil)

// SetPause pauses or resumes, as engine.Records.SetPause.
func (s *boundedStore) SetPause(ctx context.Context, p slotstore.PauseParams) error {
	return s.r.SetPause(ctx, p)
}

func (s *boundedStore) History(ctx context.Context, p slotstore.HistoryParams) (ms []slotstore.Marker, err error) {
	err = s.a.read(ctx, func() error { ms, err = s.r.History(ctx, p); return err })
	return ms, err
}

func (s *boundedStore) Pauses(ctx context.Context) (ps slotstore.Pauses, err error) {
	err = s.a.read(ctx, func() error { ps, err = s.r.Pauses(ctx); return err })
	return ps, err
}

func (s *boundedStore) Replicas(ctx context.Context) (rs []slotstore.Replica, err error) {
	err = s.a.read(ctx, func() error { rs, err = s.r.Replicas(ctx); return err })
	return rs, err
}

func (s *boundedStore) Catalog(ctx context.Context, p slotstore.CatalogParams) (es []slotstore.CatalogEntry, err error) {
	err = s.a.read(ctx, func() error { es, err = s.r.Catalog(ctx, p); return err })
	return es, err
}

// Audit audits job over [from, to], as engine.Records.Audit: its reads of
// the catalog and of the markers take one of the shared places together.
func (s *boundedStore) Audit(ctx context.Context, job string, from, to time.Time) (au engine.Audit, err error) {
	err = s.a.read(ctx, func() error { au, err = s.r.Audit(ctx, job, from, to); return err })
	return au, err
}

// read calls f once one of the shared places is free, and frees it after.
// A request whose context ends while it waits (its client went away, or
// its reads ran out of time) stops waiting, with that error.
func (a *api) read(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("waiting to read the store: %w", err)
	}
	select {
	case a.reads <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting to read the store: %w", ctx.Err())
	}
	defer func() { <-a.reads }()
	return f()
}

// refusal is an error a read answers with status and code rather than
// 503: the store answered, and said no.
type refusal struct {
	status int
	code   string
	err    error
}

func (r refusal) Error() string { return r.err.Error() }

// readStore reads with read on the store of the Run in progress, its reads
// within readTimeout, and records how they went (storeCall). It answers a
// refusal as it says, another failure 503 with what before its error, and
// returns false once it has answered.
func readStore[T any](a *api, w http.ResponseWriter, r *http.Request, what string, read func(context.Context, *boundedStore) (T, error)) (T, bool) {
	var zero T
	st, ok := a.store(w)
	if !ok {
		return zero, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	v, err := read(ctx, st)
	var no refusal
	if errors.As(err, &no) {
		a.storeCall(ctx, nil)
		httpError(w, no.status, no.code, no.Error())
		return zero, false
	}
	a.storeCall(ctx, err)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, codeStore, what+err.Error())
		return zero, false
	}
	return v, true
}

// storeCall records how a call to the store made under ctx went (the
// slotcron_store_up gauge), unless its error is not the store's: a request
// the store refused as invalid (answered 400), or one whose ctx ended
// first, because its client went away or its reads ran out of time (the
// engine's own calls, with their own deadlines, tell a store that hangs).
func (a *api) storeCall(ctx context.Context, err error) {
	if err != nil && (errors.Is(err, slotstore.ErrInvalid) || ctx.Err() != nil) {
		return
	}
	a.e.StoreCall(err)
}
