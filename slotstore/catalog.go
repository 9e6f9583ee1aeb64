package slotstore

import "time"

// Spec is a job's spec as a replica enrolls it: the fingerprint of
// everything that decides which slots of the job exist and how they are
// claimed, and that content itself, for people and for the tools that
// compute the slots of a spec in force (the engine writes it as JSON). The
// store keeps one spec in force per job; see The catalog in the package
// documentation.
type Spec struct {
	// Fingerprint names the spec: two specs with one fingerprint are the
	// same spec. Required with a spec: 1 to 128 bytes of printable ASCII.
	Fingerprint string
	// Body is the spec's content, at most 16 KiB; the store keeps it as
	// given and never reads it.
	Body []byte
	// Revision orders the specs of one job across a deploy: the
	// configuration's revision (a build number, a time), 0 for none, never
	// negative. See The catalog for how it decides which spec is in force.
	Revision int64
	// Supersedes, when it is the fingerprint of the spec in force, puts
	// this spec in force whatever the revisions say. A replica sets it
	// when it found no live replica carrying the spec in force, so that
	// a rollback, or the last replica of a spec that lost, takes over.
	Supersedes string
}

// SpecRecord is a spec as the catalog keeps it.
type SpecRecord struct {
	Fingerprint string
	Body        []byte
	Revision    int64
	Replica     string    // whose enrolment put the spec in force
	Since       time.Time // when it took force, by the store's clock
	// Until is when another spec replaced it, by the store's clock; zero
	// for the spec in force.
	Until time.Time
}

// CatalogEntry is the catalog's record of one job.
type CatalogEntry struct {
	Job string
	// InForce is the spec in force: the one every claim and skip carrying
	// a spec must name.
	InForce SpecRecord
	// Carriers are the replicas that enrolled the spec in force since it
	// took force, each with the store's time of its last enrolment of it;
	// at most 32, the most recent kept.
	Carriers map[string]time.Time
	// Past lists the specs in force before it, newest first: at most 32.
	Past []SpecRecord
	// Run is, for a schedule held as data (written by WriteSchedules), the
	// registered job it runs; empty for a job of the configuration.
	Run string
	// Version counts a schedule's writes: 1 for the put that created it,
	// one more for each put that changed it and for its delete. Zero for
	// a job of the configuration.
	Version int64
	// Seq is the store-wide sequence number of the schedule's last write
	// (ScheduleChanges); zero for a job of the configuration.
	Seq int64
	// Deleted marks a deleted schedule: its spec in force is
	// DeletedFingerprint's, the one it had is first in Past.
	Deleted bool
}

// CatalogParams selects catalog entries, sorted by job.
type CatalogParams struct {
	Jobs  []string // only these jobs; empty for every job
	After string   // only jobs sorted after this one: the next page after it
	Limit int      // at most this many; zero means 100, at most 10,000
}
