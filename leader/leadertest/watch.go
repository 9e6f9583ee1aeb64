package leadertest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// watch is a slog.Handler that keeps the records an elector logs, so the
// suite can wait for what the elector did ("waiting for the lease",
// "leadership acquired") instead of sleeping.
type watch struct {
	*book
	attrs []slog.Attr
}

type book struct {
	mu      sync.Mutex
	recs    []record
	changed chan struct{} // closed and replaced at every record
}

type record struct {
	msg   string
	at    time.Time
	attrs map[string]slog.Value
}

func newWatch() *watch { return &watch{book: &book{changed: make(chan struct{})}} }

func (w *watch) logger() *slog.Logger { return slog.New(w) }

func (w *watch) Enabled(context.Context, slog.Level) bool { return true }

func (w *watch) Handle(_ context.Context, r slog.Record) error {
	rec := record{msg: r.Message, at: time.Now(), attrs: map[string]slog.Value{}}
	for _, a := range w.attrs {
		rec.attrs[a.Key] = a.Value.Resolve()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Resolve()
		return true
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, rec)
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

func (w *watch) WithAttrs(as []slog.Attr) slog.Handler {
	return &watch{book: w.book, attrs: append(append([]slog.Attr(nil), w.attrs...), as...)}
}

func (w *watch) WithGroup(string) slog.Handler { return w }

// count returns how many records with msg were logged.
func (w *watch) count(msg string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.recs {
		if r.msg == msg {
			n++
		}
	}
	return n
}

// await waits until the n-th record with msg (counting from 1) has been
// logged and returns it, or fails t after timeout.
func (w *watch) await(t testing.TB, msg string, n int, timeout time.Duration) record {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		seen := 0
		for _, r := range w.recs {
			if r.msg == msg {
				if seen++; seen == n {
					w.mu.Unlock()
					return r
				}
			}
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %d-th %q line within %v; the last lines:\n%s", n, msg, timeout, w.tail(8))
		}
	}
}

// last returns the latest record with msg; there must be one.
func (w *watch) last(msg string) record {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.recs) - 1; i >= 0; i-- {
		if w.recs[i].msg == msg {
			return w.recs[i]
		}
	}
	panic("leadertest: no " + msg + " line")
}

// leaseEnd returns the earliest instant at which the lease of the watched
// leader can end without a release: its last winning Acquire or renewal,
// sent at sent, extended the lease to lease after the store received it.
func (w *watch) leaseEnd(lease time.Duration) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sent time.Time
	for _, r := range w.recs {
		if r.msg == "leadership acquired" || r.msg == "lease renewed" {
			if s := r.attrs["sent"].Time(); s.After(sent) {
				sent = s
			}
		}
	}
	return sent.Add(lease)
}

// tail formats the last n records, for failure messages.
func (w *watch) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, r := range w.recs[max(0, len(w.recs)-n):] {
		fmt.Fprintf(&b, "  %s %s", r.at.Format("15:04:05.000"), r.msg)
		for k, v := range r.attrs {
			if k != "duty" {
				fmt.Fprintf(&b, " %s=%v", k, v)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
