// The job's spec: what it enrolls in the store's catalog, so that every
// replica claims the job's slots under one spec (slotstore's package
// documentation, The catalog).

package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/slotcron/slotcron/internal/schedule"
	"github.com/slotcron/slotcron/policy"
	"github.com/slotcron/slotcron/slotstore"
)

// SpecBody is a job's spec as the catalog keeps it (JSON): everything that
// decides which slots of the job exist and how they are claimed and run.
// Durations are Go duration strings. Tools read it back to compute the
// slots of a spec in force (Slots) and to say what differs between two.
type SpecBody struct {
	// Retired marks the spec a reload enrolls for a job it removed: the
	// job takes no slot anywhere while it is in force (RetiredSpec).
	Retired  bool   `json:"retired,omitempty"`
	Schedule string `json:"schedule"`
	Zone     string `json:"zone"`
	// ZoneRules digests the zone's offsets as this replica's tz data has
	// them (schedule.ZoneRules): replicas whose tz data disagree conflict.
	ZoneRules          string `json:"zone_rules"`
	Jitter             string `json:"jitter"`
	Lease              string `json:"lease"`
	Timeout            string `json:"timeout"`
	StartingDeadline   string `json:"starting_deadline"`
	OnCrash            string `json:"on_crash"`
	MaxAttempts        int    `json:"max_attempts"`
	Overlap            string `json:"overlap"`
	CatchUp            string `json:"catch_up"`
	CatchUpLimit       int    `json:"catch_up_limit"`
	History            string `json:"history"`
	Retries            int    `json:"retries"`
	RetryBackoff       string `json:"retry_backoff"`
	RetryMaxBackoff    string `json:"retry_max_backoff"`
	PauseAfterFailures int    `json:"pause_after_failures"`
	// Params is the SHA-256 of the job's params as the configuration file
	// wrote them, ${VAR} references unexpanded (JobSpec.ParamsWritten),
	// else as re-encoded; empty with none.
	Params string `json:"params_sha256,omitempty"`
	// ParamsJSON is a schedule held as data's params themselves, as JSON:
	// replicas hand them to its runs (a job of the configuration keeps its
	// own in the file, and only their hash here).
	ParamsJSON json.RawMessage `json:"params,omitempty"`
	// Start and End bound a schedule held as data's slots, RFC 3339, both
	// inclusive; empty for none.
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	// JitterWindow is a schedule held as data's jitter as written, of
	// which Jitter is its share; empty for none.
	JitterWindow string `json:"jitter_window,omitempty"`
	// Run is the registered job a schedule held as data runs, so that its
	// fingerprint changes with it: a put that moves a schedule to another
	// job supersedes the claims made under the old one.
	Run string `json:"run,omitempty"`
	// DSTGap and DSTRepeat are a fixed-time schedule's DST rule when it is
	// not the default (schedule.DST); empty otherwise, so the spec of a
	// job without one is what it was before the rule could be chosen.
	DSTGap    string `json:"dst_gap,omitempty"`
	DSTRepeat string `json:"dst_repeat,omitempty"`
	// Except are the calendars the job skips, dates and all: a replica
	// computes which slots are skipped from the spec alone.
	Except []Calendar `json:"except,omitempty"`
	// MaxRuns is the job's max_runs; the End it puts is in End.
	MaxRuns int `json:"max_runs,omitempty"`
	// AfterDataLoss is the job's after_data_loss when it is run; empty
	// for skip, so the spec of a job without it is what it was before it
	// could be chosen, and a build that cannot read it does not run the
	// job's slots as it would not.
	AfterDataLoss string `json:"after_data_loss,omitempty"`
}

// BodyOf returns j's spec body.
func BodyOf(j JobSpec) SpecBody {
	b := SpecBody{
		Jitter: j.Jitter.String(), Lease: j.Lease.String(), Timeout: j.Timeout.String(),
		StartingDeadline: j.Deadline.String(), OnCrash: string(j.OnCrash), MaxAttempts: j.MaxAttempts,
		Overlap: string(j.Overlap), CatchUp: string(j.CatchUp), CatchUpLimit: j.CatchUpLimit, History: j.History.String(),
		Retries: j.Retries.Max, RetryBackoff: j.Retries.Backoff.String(), RetryMaxBackoff: j.Retries.MaxBackoff.String(),
		PauseAfterFailures: j.PauseAfterFailures,
	}
	if j.Schedule != nil { // every job's but some tests'
		b.Schedule, b.Zone = j.Schedule.String(), j.Schedule.Location().String()
		b.ZoneRules = schedule.ZoneRules(j.Schedule.Location())
		from, until := j.Schedule.Bounds()
		b.Start, b.End = stamp(from), stamp(until)
		if d := j.Schedule.DST(); d != (schedule.DST{}) && (d.Gap != schedule.GapShift || d.Repeat != schedule.RepeatFirst) {
			b.DSTGap, b.DSTRepeat = string(d.Gap), string(d.Repeat)
		}
	}
	b.Except, b.MaxRuns = j.Except, j.MaxRuns
	if j.AfterDataLoss == policy.AfterDataLossRun {
		b.AfterDataLoss = string(j.AfterDataLoss)
	}
	if j.Run != "" {
		b.Run, b.ParamsJSON = j.Run, j.Params
		if j.JitterWindow > 0 {
			b.JitterWindow = j.JitterWindow.String()
		}
	}
	params := j.ParamsWritten
	if params == nil {
		params = j.Params
	}
	if params != nil {
		sum := sha256.Sum256(params)
		b.Params = hex.EncodeToString(sum[:])
	}
	return b
}

// SpecOf returns the spec j enrolls with under the configuration's
// revision (0 for none): its body as JSON and the body's fingerprint.
func SpecOf(j JobSpec, revision int64) slotstore.Spec {
	s := specOfBody(BodyOf(j))
	s.Revision = revision
	return s
}

func specOfBody(b SpecBody) slotstore.Spec {
	body, err := json.Marshal(b)
	if err != nil {
		panic(err) // strings, ints and a bool only
	}
	sum := sha256.Sum256(body)
	return slotstore.Spec{Fingerprint: "v1:" + hex.EncodeToString(sum[:12]), Body: body}
}

// RetiredSpec is the spec a reload enrolls for a job it removed, under
// revision: once in force, replicas that still have the job conflict with
// it and claim nothing, and the sweep leaves its slots alone.
func RetiredSpec(revision int64) slotstore.Spec {
	s := specOfBody(SpecBody{Retired: true})
	s.Revision = revision
	return s
}

// ParseBody reads a spec body the catalog keeps; ok is false for a body
// this build cannot read: none, not JSON, or with a field this build does
// not know. A newer build's setting that decides which slots a job has
// (a calendar, a DST rule) must not be dropped in silence: a replica that
// ran the body without it would claim slots the spec in force has not.
func ParseBody(body []byte) (b SpecBody, ok bool) {
	if len(body) == 0 {
		return b, false
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	return b, d.Decode(&b) == nil && !d.More()
}

// Differences lists the fields in which a and b differ, by their JSON
// names, each with both values: "schedule: \"*/2 * * * * *\" → \"*/3 * * * * *\"".
func Differences(a, b SpecBody) []string {
	var ma, mb map[string]any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []string
	for _, k := range specFields {
		va, vb := ma[k], mb[k]
		if jsonText(va) != jsonText(vb) {
			out = append(out, k+": "+jsonText(va)+" → "+jsonText(vb))
		}
	}
	return out
}

// specFields are SpecBody's JSON names in the order people read them.
var specFields = []string{"retired", "schedule", "zone", "zone_rules", "jitter", "lease", "timeout", "starting_deadline",
	"on_crash", "max_attempts", "overlap", "catch_up", "catch_up_limit", "history", "retries", "retry_backoff",
	"retry_max_backoff", "pause_after_failures", "params_sha256", "params", "start", "end", "jitter_window", "run",
	"dst_gap", "dst_repeat", "except", "max_runs", "after_data_loss"}

func jsonText(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// bodyKey is everything BodyOf reads of a job but its calendars, which are
// a slice: jobs of equal keys have one spec body. A schedule is its parse,
// which the jobs of one schedule share.
type bodyKey struct {
	sched                                                   *schedule.Schedule
	run                                                     string
	lease, timeout, deadline, history, jitter, jitterWindow time.Duration
	onCrash                                                 policy.OnCrash
	afterLoss                                               policy.AfterDataLoss
	catchUp                                                 policy.CatchUp
	overlap                                                 policy.Overlap
	maxAtt, catchUpLimit, pauseAfter, maxRuns               int
	retries                                                 Retries
	params, written                                         string
	noParams, noWritten                                     bool
}

// bodyKeyOf is j's bodyKey, and false for a job with calendars.
func bodyKeyOf(j JobSpec) (bodyKey, bool) {
	return bodyKey{sched: j.Schedule, run: j.Run, lease: j.Lease, timeout: j.Timeout, deadline: j.Deadline,
		history: j.History, jitter: j.Jitter, jitterWindow: j.JitterWindow, onCrash: j.OnCrash, afterLoss: j.AfterDataLoss,
		catchUp: j.CatchUp, overlap: j.Overlap, maxAtt: j.MaxAttempts, catchUpLimit: j.CatchUpLimit,
		pauseAfter: j.PauseAfterFailures, maxRuns: j.MaxRuns, retries: j.Retries, params: string(j.Params),
		written: string(j.ParamsWritten), noParams: j.Params == nil, noWritten: j.ParamsWritten == nil}, len(j.Except) == 0
}
