package slotstore

import "time"

// The actions log: who did what to the cluster, kept beside the markers.
// See The actions log in the package documentation.

// Action is one entry of the actions log: a mutation made through the HTTP
// API, the CLI or the Go API, or by slotcron itself. Text fields hold UTF-8
// without NUL bytes; a value that is not, or is longer than its bound, or
// a required field left empty, is ErrInvalid naming the field.
type Action struct {
	// Seq is set by the store: store-wide, increasing in the order entries
	// were appended; the cursor of Actions pages. Ignored by AppendAction.
	Seq int64
	// At is set by the store: its own clock when the entry was appended.
	// Ignored by AppendAction.
	At time.Time
	// Who did it: a token's name, "cli user@host", "slotcron". Required,
	// at most 200 bytes.
	Who string
	// Role is the role Who acted in (reader, operator, admin), or empty
	// where none applies. At most 32 bytes.
	Role string
	// Via is how: http, cli, go or slotcron. Required, at most 32 bytes.
	Via string
	// Kind is what was done: pause, resume, trigger, backfill,
	// schedule-put... Required, at most 64 bytes.
	Kind string
	// Target is the job or schedule acted on, empty for the cluster. At
	// most 300 bytes.
	Target string
	// Reason is why, as its author gave it. At most 1,000 bytes.
	Reason string
	// Result is "ok" or what went wrong. Required, at most 1,000 bytes.
	Result string
	// Detail is what else identifies the action: a slot, a range, a
	// revision. At most 1,000 bytes.
	Detail string
	// Retain is how long the store keeps the entry after At: Prune deletes
	// it once At + Retain is before the store's clock. Required, positive,
	// at most ten years (87,660 hours).
	Retain time.Duration
}

// ActionsParams selects entries of the actions log, newest first
// (descending Seq).
type ActionsParams struct {
	// Before, when positive, lists only entries whose Seq is below it: the
	// next page after one whose last (oldest) entry has Seq Before. Zero
	// lists from the newest; negative is ErrInvalid.
	Before int64
	// Limit bounds the entries listed: 1 to 1,000; zero means 100.
	Limit int
	// Who, Kind and Target, when not empty, list only the entries whose
	// field is exactly that value.
	Who, Kind, Target string
	// Since, when not zero, lists only entries whose At is not before it.
	Since time.Time
}
