package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// markerFields is the number of values a script returns for a marker: the
// FIELDS of scripts/prelude.lua.
const markerFields = 15

// reply reads the values of a script's reply, remembering the first value
// that is not what it should be.
type reply struct {
	v   []any
	i   int
	err error
}

func newReply(res any, stride int) (*reply, int, error) {
	v, ok := res.([]any)
	if !ok || len(v)%stride != 0 {
		return nil, 0, fmt.Errorf("unexpected script reply %T of %d values", res, len(v))
	}
	return &reply{v: v}, len(v) / stride, nil
}

// str returns the next value as a string.
func (r *reply) str() string {
	if r.i >= len(r.v) {
		r.fail("reply too short")
		return ""
	}
	v := r.v[r.i]
	r.i++
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case nil:
		return ""
	}
	r.fail(fmt.Sprintf("value %d is a %T", r.i-1, v))
	return ""
}

// int returns the next value as an integer; the empty string is zero.
func (r *reply) int() int64 {
	s := r.str()
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.fail(fmt.Sprintf("value %d: %v", r.i-1, err))
	}
	return n
}

// millis returns the next value, Unix milliseconds, as a time in UTC; the
// empty string is the zero time.
func (r *reply) millis() time.Time {
	n := r.int()
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func (r *reply) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("malformed script reply: %s", msg)
	}
}

// marker reads the FIELDS of the marker of job@slot.
func (r *reply) marker(job string, slot int64) slotstore.Marker {
	return slotstore.Marker{
		Job:         job,
		Slot:        time.Unix(slot, 0).UTC(),
		State:       slotstore.State(r.str()),
		Holder:      r.str(),
		Fence:       r.int(),
		Attempt:     int(r.int()),
		ClaimedAt:   r.millis(),
		LeaseEnd:    r.millis(),
		KeepUntil:   r.millis(),
		FinishedAt:  r.millis(),
		Outcome:     slotstore.Outcome(r.str()),
		Error:       r.str(),
		Duration:    time.Duration(r.int()),
		Reason:      r.str(),
		Manual:      r.str() == "1",
		Incarnation: r.str(),
		Backfill:    r.str() == "1",
	}
}

// refs reads the claims of job a script lists in one value, as
// 'slot fence slot fence ...'.
func (r *reply) refs(job string) []slotstore.Ref {
	f := strings.Fields(r.str())
	if len(f)%2 != 0 {
		r.fail("odd list of claims")
		return nil
	}
	var out []slotstore.Ref
	for i := 0; i < len(f); i += 2 {
		slot, err1 := strconv.ParseInt(f[i], 10, 64)
		fence, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil {
			r.fail("claim " + f[i] + " " + f[i+1])
			return nil
		}
		out = append(out, slotstore.Ref{Job: job, Slot: time.Unix(slot, 0).UTC(), Fence: fence})
	}
	return out
}
