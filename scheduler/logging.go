package scheduler

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (debug, info, warn or error)", s)
}

// newLogger builds the replica's logger from cfg. In JSON the run attributes
// (job, slot, fence, attempt, replica) are top-level keys.
func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	level, _ := parseLevel(cfg.Level) // validated before
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
