package harness

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
)

// warnCounter is the logger the harness gives the schedulers: the one a
// user gets by default (slog's text handler at info, the default level),
// writing to io.Discard so every line is built and formatted as in a
// deployment but not printed. Beside that it counts the warnings and
// errors and prints the first five to stderr, so a misbehaving run is
// visible without its logs swamping the report.
type warnCounter struct {
	n       atomic.Int64
	printed atomic.Int64
	// starting is how many replicas have not logged "jobs enrolled", the
	// end of their start-up, yet (startup); startedAt is when the last one
	// did (UnixNano).
	starting  atomic.Int64
	startedAt atomic.Int64
}

func newWarnCounter() *warnCounter { return &warnCounter{} }

// startup makes c watch for the end of the start-ups of replicas.
func (c *warnCounter) startup(replicas int) { c.starting.Store(int64(replicas)) }

// logger returns the logger to give each scheduler with WithLogger.
func (c *warnCounter) logger() *slog.Logger {
	return slog.New(&countingHandler{
		c:    c,
		sink: slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}),
		warn: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}),
	})
}

// countingHandler formats every record at info and above into sink, as the
// default logger would, and counts (and prints the first few of) the
// warnings through warn.
type countingHandler struct {
	c          *warnCounter
	sink, warn slog.Handler
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.sink.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "jobs enrolled" && h.c.starting.Load() > 0 && h.c.starting.Add(-1) == 0 {
		h.c.startedAt.Store(r.Time.UnixNano())
	}
	if err := h.sink.Handle(ctx, r); err != nil {
		return err
	}
	if r.Level < slog.LevelWarn {
		return nil
	}
	h.c.n.Add(1)
	if h.c.printed.Add(1) <= 5 {
		return h.warn.Handle(ctx, r)
	}
	return nil
}

func (h *countingHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &countingHandler{c: h.c, sink: h.sink.WithAttrs(a), warn: h.warn.WithAttrs(a)}
}

func (h *countingHandler) WithGroup(g string) slog.Handler {
	return &countingHandler{c: h.c, sink: h.sink.WithGroup(g), warn: h.warn.WithGroup(g)}
}
