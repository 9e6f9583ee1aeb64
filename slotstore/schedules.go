package slotstore

import (
	"context"
	"errors"
)

// Schedules held as data: catalog entries a program writes (WriteSchedules)
// rather than replicas enroll from their configuration. See Schedules held
// as data in the package documentation.

// DeletedFingerprint is the fingerprint of the spec in force of a deleted
// schedule: no claim names it, so every claim of the schedule that names a
// spec is Superseded from the delete on.
const DeletedFingerprint = "deleted"

// AnyVersion, as ScheduleWrite.IfVersion, writes whatever the schedule's
// current version.
const AnyVersion int64 = -1

// MaxScheduleWrites bounds the writes of one WriteSchedules call.
const MaxScheduleWrites = 1000

var (
	// ErrVersionMismatch reports a schedule write whose IfVersion is not
	// the schedule's current version. Nothing was changed.
	ErrVersionMismatch = errors.New("slotstore: schedule version mismatch")
	// ErrNoSchedule reports a delete of a schedule that does not exist or
	// is already deleted. Nothing was changed.
	ErrNoSchedule = errors.New("slotstore: no such schedule")
	// ErrNotSchedule reports a write of a name that is a job of the
	// replicas' configuration, which only the configuration changes.
	// Nothing was changed.
	ErrNotSchedule = errors.New("slotstore: a job of the configuration, not a schedule")
)

// ScheduleWrite puts or deletes one schedule.
type ScheduleWrite struct {
	// ID names the schedule: the job name its markers, fences, generation,
	// pauses and history are kept under, so it shares the names of the
	// configuration's jobs. 1 to 200 bytes of printable ASCII.
	ID string
	// Delete deletes the schedule; Run and Spec must then be empty.
	Delete bool
	// Run is the registered job the schedule runs: 1 to 200 bytes of
	// printable ASCII. Required with a put.
	Run string
	// Spec is the schedule's spec: Fingerprint and Body as with Enroll
	// (the fingerprint not DeletedFingerprint), Revision and Supersedes
	// zero. Required with a put. Claims name the fingerprint alone, so it
	// must cover Run: a put that changes Run and keeps the fingerprint
	// leaves claims under the old Run standing.
	Spec Spec
	// IfVersion is the write's precondition: AnyVersion for none, 0 for a
	// schedule that does not exist or is deleted (a create), else the
	// schedule's current version (an update of what the writer read).
	IfVersion int64
}

// WriteSchedulesParams is one batch of schedule writes.
type WriteSchedulesParams struct {
	// By names who writes (a token's name, "cli user@host"): the spec
	// record's Replica. 1 to 200 bytes of text.
	By     string
	Writes []ScheduleWrite // 1 to MaxScheduleWrites
}

// ScheduleResult is the outcome of one write.
type ScheduleResult struct {
	// Entry is the schedule's entry after the write (before it, when Err
	// is set and the entry exists).
	Entry CatalogEntry
	// Err is nil, ErrVersionMismatch, ErrNoSchedule or ErrNotSchedule.
	Err error
}

// ScheduleParams selects live schedules (not deleted), sorted by ID.
type ScheduleParams struct {
	IDs    []string // only these; empty for every schedule
	Run    string   // only those that run this job
	Prefix string   // only IDs that begin with it
	After  string   // only IDs sorted after it: the next page after it
	Limit  int      // at most this many; zero means 100, at most 10,000
}

// ChangesParams asks for the schedule writes after a sequence number.
type ChangesParams struct {
	After int64 // only entries whose Seq is greater
	Limit int   // at most this many; zero means 1,000, at most 10,000
}

// Changes is a page of the schedules written after a sequence number.
type Changes struct {
	// Entries are the schedules whose last write came after
	// ChangesParams.After, deleted ones included, in ascending Seq, each
	// as it is now. An entry with no Run and not deleted is a deleted
	// schedule's name a job of the configuration has taken since: no
	// schedule any more.
	Entries []CatalogEntry
	// Head is the Seq of the store's newest schedule write, 0 for none. A
	// reader whose cursor is beyond it is reading a store that lost what
	// it had (a Redis restarted empty): it reads every schedule again.
	Head int64
}

// ScheduleWatcher is implemented by stores that can tell a replica that
// schedules were written without its asking (an etcd watch, Postgres
// LISTEN/NOTIFY, Redis pub/sub), so that it reads ScheduleChanges at once
// rather than at its next poll.
type ScheduleWatcher interface {
	// WatchSchedules returns a channel that receives soon after any
	// schedule write by any client of the store, several writes possibly
	// coalesced into one notice, until ctx is done, when it is closed. A
	// notice may be lost (a connection cut and restored): readers keep
	// polling ScheduleChanges, less often.
	WatchSchedules(ctx context.Context) <-chan struct{}
}
