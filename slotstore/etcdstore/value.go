package etcdstore

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/slotcron/slotcron/slotstore"
)

// pendingFence stands for the fence of a claim decided in a transaction not
// yet committed: the transaction's revision, known once it commits.
const pendingFence = -1

// maxErrorBytes bounds the error text a marker keeps (FinishParams.Error):
// a marker must fit in an etcd request with others, and a finish too large
// for etcd would leave its slot to be taken over and run again.
const maxErrorBytes = 64 << 10

// markerValue is a marker as its key holds it, in JSON. Fence is zero for
// a marker whose last claim is the write that put this value: the fence is
// then the key's ModRevision, the revision of the transaction that won the
// claim (a value cannot hold the revision it is written at). Every later
// write of the key writes the fence out.
type markerValue struct {
	Job         string    `json:"job"`
	Slot        int64     `json:"slot"` // Unix seconds
	State       string    `json:"state"`
	Holder      string    `json:"holder,omitempty"`
	Fence       int64     `json:"fence,omitempty"`
	Attempt     int       `json:"attempt,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	LeaseEnd    time.Time `json:"lease_end,omitzero"`
	KeepUntil   time.Time `json:"keep_until,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Outcome     string    `json:"outcome,omitempty"`
	Error       string    `json:"error,omitempty"`
	Duration    int64     `json:"duration_ns,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Manual      bool      `json:"manual,omitempty"`
	Backfill    bool      `json:"backfill,omitempty"`
	Incarnation string    `json:"incarnation,omitempty"`
}

// encodeMarker returns m as its key holds it. A pending fence is written
// as zero: the key's ModRevision.
func encodeMarker(m slotstore.Marker) []byte {
	v := markerValue{
		Job: m.Job, Slot: m.Slot.Unix(), State: string(m.State), Holder: m.Holder, Fence: max(m.Fence, 0),
		Attempt: m.Attempt, ClaimedAt: m.ClaimedAt, LeaseEnd: m.LeaseEnd, KeepUntil: m.KeepUntil,
		FinishedAt: m.FinishedAt, Outcome: string(m.Outcome), Error: m.Error, Duration: int64(m.Duration),
		Reason: m.Reason, Manual: m.Manual, Backfill: m.Backfill, Incarnation: m.Incarnation,
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("etcdstore: encode marker: %v", err)) // strings, ints and times always encode
	}
	return b
}

// decodeMarker reads a marker value whose key has ModRevision mod
// (pendingFence for a value not yet committed), in a prefix whose fences
// are base plus a revision (clusterValue.FenceBase).
func decodeMarker(b []byte, mod, base int64) (slotstore.Marker, error) {
	var v markerValue
	if err := json.Unmarshal(b, &v); err != nil {
		return slotstore.Marker{}, fmt.Errorf("etcdstore: decode marker: %w", err)
	}
	m := stored(slotstore.Marker{
		Job: v.Job, Slot: time.Unix(v.Slot, 0), State: slotstore.State(v.State), Holder: v.Holder, Fence: v.Fence,
		Attempt: v.Attempt, ClaimedAt: v.ClaimedAt, LeaseEnd: v.LeaseEnd, KeepUntil: v.KeepUntil,
		FinishedAt: v.FinishedAt, Outcome: slotstore.Outcome(v.Outcome), Error: v.Error,
		Duration: time.Duration(v.Duration), Reason: v.Reason, Manual: v.Manual, Backfill: v.Backfill,
		Incarnation: v.Incarnation,
	})
	if m.Fence == 0 && m.Attempt > 0 {
		m.Fence = mod
		if mod != pendingFence {
			m.Fence = base + mod
		}
	}
	return m, nil
}

// markerOf decodes the marker kv holds.
func markerOf(kv *mvccpb.KeyValue, base int64) (slotstore.Marker, error) {
	m, err := decodeMarker(kv.Value, kv.ModRevision, base)
	if err != nil {
		return m, fmt.Errorf("%w (key %q)", err, kv.Key)
	}
	return m, nil
}

// stored returns m as its key gives it back: every time in UTC, without a
// monotonic clock reading.
func stored(m slotstore.Marker) slotstore.Marker {
	m.Slot = m.Slot.UTC()
	m.ClaimedAt, m.LeaseEnd = utc(m.ClaimedAt), utc(m.LeaseEnd)
	m.KeepUntil, m.FinishedAt = utc(m.KeepUntil), utc(m.FinishedAt)
	return m
}

// utc is t in UTC, and the zero time as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// truncateError cuts a run's error text to maxErrorBytes, at a character
// boundary, saying so at its end.
func truncateError(s string) string {
	if len(s) <= maxErrorBytes {
		return s
	}
	const tail = " … (truncated)"
	cut := maxErrorBytes - len(tail)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}

// holderValue is the value of a holder key: the fence of the claim whose
// holder's process lease it is under, or zero when that is the key's
// ModRevision (the write that won the claim put it).
type holderValue struct {
	Fence int64 `json:"fence,omitempty"`
}

func encodeHolder(fence int64) []byte {
	b, _ := json.Marshal(holderValue{Fence: max(fence, 0)})
	return b
}

// holderFence returns the fence of the claim kv, a holder key, stands for.
func holderFence(kv *mvccpb.KeyValue, base int64) int64 {
	var v holderValue
	if json.Unmarshal(kv.Value, &v) != nil {
		return 0
	}
	if v.Fence == 0 {
		return base + kv.ModRevision
	}
	return v.Fence
}

// genValue is a job's generation.
type genValue struct {
	Born time.Time `json:"born"`
}

func encodeGen(born time.Time) []byte {
	b, _ := json.Marshal(genValue{Born: born.UTC()})
	return b
}

func decodeGen(b []byte) (time.Time, error) {
	var v genValue
	if err := json.Unmarshal(b, &v); err != nil {
		return time.Time{}, fmt.Errorf("etcdstore: decode generation: %w", err)
	}
	return v.Born.UTC(), nil
}

// clusterValue records the etcd cluster the prefix's keys were written in.
type clusterValue struct {
	ID string `json:"id"` // the cluster ID, in hex
	// FenceBase is added to a revision to make a fence: the store's clock
	// in microseconds when the record was written, so that the fences of a
	// cluster that replaced another (restored, or new and empty, its
	// revisions starting near 1 again) are above every fence issued before,
	// as revisions grow far slower than a microsecond each.
	FenceBase int64 `json:"fence_base,omitempty"`
}

// pauseValue is a pause's note.
type pauseValue struct {
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// beatValue is a replica's last beat.
type beatValue struct {
	Replica     string          `json:"replica"`
	Incarnation string          `json:"incarnation,omitempty"`
	Version     string          `json:"version,omitempty"`
	Started     time.Time       `json:"started,omitzero"`
	Duties      json.RawMessage `json:"duties"`
	TTL         time.Duration   `json:"ttl_ns"`
	Seen        time.Time       `json:"seen"`
	Revision    int64           `json:"revision,omitempty"`
}
