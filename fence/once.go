package fence

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/internal/fencemetrics"
	"github.com/slotcron/slotcron/jobs"
)

// DefaultRetain is how long PG.Once, Redis.SetOnce and Memory.SetOnce keep
// the record of a slot's effect when their Retain is zero: the default
// history of a job, for which the store keeps the slot's marker (7 days,
// slotstore.ClaimRequest.Retain). A slot can run again only while its
// marker is kept, so a record kept as long refuses every repeat. A job
// whose history is longer needs a Retain at least as long.
const DefaultRetain = 7 * 24 * time.Hour

// retention returns the retention a helper's Retain field asks for.
func retention(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("%w: negative retention %v", ErrInvalid, d)
	case d == 0:
		return DefaultRetain, nil
	}
	return d, nil
}

// checkSetOnce validates the arguments of a SetOnce and returns the
// retention of its record: retain, or DefaultRetain when zero.
func checkSetOnce(key string, run jobs.Run, ttl, retain time.Duration) (time.Duration, error) {
	if err := validate(key, run.Fence); err != nil {
		return 0, err
	}
	if err := validateRun(run); err != nil {
		return 0, err
	}
	if ttl < 0 {
		return 0, fmt.Errorf("%w: key %q: negative TTL %v", ErrInvalid, key, ttl)
	}
	return retention(retain)
}

// refuse counts and logs a refused once-per-slot write and returns its
// error. label is the metric's resource label, a bounded name. A writer a
// newer holder superseded is a fence rejection, logged and counted as
// reject does; a repeat is counted in slotcron_fence_repeats_total and
// logged at INFO: the effect exists, nothing is wrong.
func refuse(log *slog.Logger, label string, e *AppliedError) error {
	if log == nil {
		log = slog.Default()
	}
	if e.stale() {
		fencemetrics.Rejections.WithLabelValues(label).Inc()
		log.Warn("fence rejected", "resource", e.Resource, "run", e.Key, "fence", e.Fence, "highest", e.Applied)
		return e
	}
	fencemetrics.Repeats.WithLabelValues(label).Inc()
	log.Info("effect already applied", "resource", e.Resource, "run", e.Key, "fence", e.Fence, "applied", e.Applied)
	return e
}
