package rules

import (
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// The bounds of the actions log (slotstore.Action's fields).
const (
	// MaxActionRetain bounds Action.Retain: ten years of 365.25 days.
	MaxActionRetain = 10 * 8766 * time.Hour
	// DefaultActionsLimit and MaxActionsLimit bound a page of Actions.
	DefaultActionsLimit = 100
	MaxActionsLimit     = 1000
)

// ValidateAction refuses an entry of the actions log with a required field
// empty, a field longer than its bound or not text (UTF-8 without NUL
// bytes), or a Retain out of (0, MaxActionRetain]; the error wraps
// slotstore.ErrInvalid and names the field. Seq and At are the store's to
// set and are not checked.
func ValidateAction(a slotstore.Action) error {
	for _, f := range []struct {
		name, value string
		max         int
		required    bool
	}{
		{"who", a.Who, 200, true}, {"role", a.Role, 32, false}, {"via", a.Via, 32, true},
		{"kind", a.Kind, 64, true}, {"target", a.Target, 300, false}, {"reason", a.Reason, 1000, false},
		{"result", a.Result, 1000, true}, {"detail", a.Detail, 1000, false},
	} {
		switch {
		case f.required && f.value == "":
			return invalid("append action: %s is required", f.name)
		case len(f.value) > f.max:
			return invalid("append action: %s is %d bytes, more than %d", f.name, len(f.value), f.max)
		case !isText(f.value):
			return invalid("append action: %s %q is not UTF-8 text without NUL bytes", f.name, f.value)
		}
	}
	if a.Retain <= 0 || a.Retain > MaxActionRetain {
		return invalid("append action: retain %v (more than 0, at most %v)", a.Retain, MaxActionRetain)
	}
	return nil
}

// NormalizeActions validates an Actions request and defaults its limit.
func NormalizeActions(p slotstore.ActionsParams) (slotstore.ActionsParams, error) {
	if p.Before < 0 {
		return p, invalid("actions: before %d is negative", p.Before)
	}
	if p.Limit < 0 || p.Limit > MaxActionsLimit {
		return p, invalid("actions: limit %d (1 to %d, or 0 for %d)", p.Limit, MaxActionsLimit, DefaultActionsLimit)
	}
	if p.Limit == 0 {
		p.Limit = DefaultActionsLimit
	}
	return p, nil
}

// ActionListed reports whether a is an entry p selects: below Before when
// it is set, and matching Who, Kind, Target and Since when they are (but
// for Limit, which the caller applies, newest first).
func ActionListed(a slotstore.Action, p slotstore.ActionsParams) bool {
	return (p.Before == 0 || a.Seq < p.Before) && (p.Who == "" || a.Who == p.Who) &&
		(p.Kind == "" || a.Kind == p.Kind) && (p.Target == "" || a.Target == p.Target) &&
		(p.Since.IsZero() || !a.At.Before(p.Since))
}

// ActionExpired reports whether Prune deletes a at the store's time now:
// its At + Retain is before now.
func ActionExpired(a slotstore.Action, now time.Time) bool {
	return a.At.Add(a.Retain).Before(now)
}
