package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"time"
)

// The span of years whose offsets ZoneRules digests: wide enough for any
// slot a replica computes today and for years of rule changes ahead.
const (
	rulesFrom = 1990
	rulesTo   = 2060
)

var zoneRules sync.Map // zone name -> its digest

// ZoneRules returns a digest of loc's offsets and their changes from 1990 to
// 2060 as this process's time zone data has them. Replicas that read
// different tz data (hosts with different tzdata packages) and disagree
// about a rule get different digests; the job's spec carries it, so the
// disagreement is a spec conflict, named, rather than slots that differ
// near a changed rule.
func ZoneRules(loc *time.Location) string {
	name := loc.String()
	if d, ok := zoneRules.Load(name); ok {
		return d.(string)
	}
	h := sha256.New()
	t := time.Date(rulesFrom, 1, 1, 0, 0, 0, 0, loc)
	end := time.Date(rulesTo, 1, 1, 0, 0, 0, 0, time.UTC)
	for t.Before(end) {
		zone, off := t.Zone()
		h.Write(strconv.AppendInt(nil, t.Unix(), 10))
		h.Write([]byte{' '})
		h.Write([]byte(zone))
		h.Write(strconv.AppendInt([]byte{' '}, int64(off), 10))
		h.Write([]byte{'\n'})
		_, next := t.ZoneBounds()
		if next.IsZero() || !next.After(t) {
			break // no change after t: the offset holds for good
		}
		t = next
	}
	d := "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	zoneRules.Store(name, d)
	return d
}
