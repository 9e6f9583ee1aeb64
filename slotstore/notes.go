package slotstore

import "time"

// What the store keeps for people beside the markers: pauses with their
// notes, and replicas' beats.

// PauseParams pauses or resumes.
type PauseParams struct {
	Job    string // empty for the whole cluster
	Paused bool   // false resumes
	// By says who paused ("alice", "http 10.0.0.7", "cli root@host") and
	// Reason why; both are optional and kept, at most 1,000 bytes each
	// (ErrInvalid when longer), with the pause. A resume ignores them.
	By, Reason string
}

// Pauses is what is paused.
type Pauses struct {
	All  bool     // the whole cluster
	Jobs []string // the jobs paused on their own, sorted; never nil
	// Notes says, for each pause in force, who set it, when and why; the
	// key is the job, "" for the cluster's. Never nil. A pause set before
	// the store kept notes has none.
	Notes map[string]PauseNote
}

// PauseNote records one pause.
type PauseNote struct {
	By, Reason string
	At         time.Time // when it was set, by the store's clock
}

// BeatKeep is how long after its TTL ran out a replica's last beat is kept
// (and listed by Replicas, not live), so an operator sees a replica that
// went away.
const BeatKeep = time.Hour

// Beat is what a replica says of itself.
type Beat struct {
	Replica     string // required, at most 200 bytes
	Incarnation string
	Version     string    // the replica's build
	Started     time.Time // when its process started (its own clock)
	// Revision is the revision of the configuration the replica runs (its
	// file's revision:), 0 for none.
	Revision int64
	// Duties are the duties the replica leads, each with its term's fence.
	Duties []DutyTerm
	// TTL is how long the beat stands; required, positive.
	TTL time.Duration
}

// DutyTerm is a duty a replica leads.
type DutyTerm struct {
	Name  string
	Fence int64
	Since time.Time // when the term began (the replica's clock)
}

// Replica is a replica as its last beat describes it.
type Replica struct {
	Beat
	Seen time.Time // when the store recorded the last beat (store clock)
	Live bool      // Seen + TTL is not yet past, by the store's clock
}
