package etcdstore

import (
	"fmt"
	"strings"
	"time"
)

// The keys under the prefix (doc.go draws the layout). A job or replica
// name is escaped (escape) so that it holds no '/': the keys of one job are
// then a range of their own, which no other job's keys fall in.
const (
	keyCluster  = "cluster"    // the cluster the prefix's keys were written in
	dirGen      = "gen/"       // gen/<job>: the job's generation
	dirJobs     = "jobs/"      // jobs/<job>: every job that has had a marker
	dirMarkers  = "m/"         // m/<job>/<slot>: a slot's marker
	dirRunning  = "run/"       // run/<job>/<slot>: a copy of each running marker
	dirHolders  = "hold/"      // hold/<job>/<slot>: under the holder's process lease
	keyPauseAll = "pause/all"  // the cluster's pause
	dirPauses   = "pause/"     // the pauses: pause/all and pause/job/<job>
	dirJobPause = "pause/job/" // pause/job/<job>: a job's pause
	dirBeats    = "beat/"      // beat/<replica>: a replica's last beat
	dirCatalog  = "cat/"       // cat/<job>: the job's catalog entry (catalog.go)
	dirSpec     = "spec/"      // spec/<job>: the fingerprint of the job's spec in force
	// The indexes of schedules held as data (schedules.go). They hold a
	// schedule's ID as it is, not escaped (IDs are printable ASCII), so
	// they sort as the IDs do; a run is escaped, so it holds no '/'.
	dirSchedules = "sched/"      // sched/<id>: every schedule ever written; ModRevision is its Seq
	dirLive      = "sched-live/" // sched-live/<id>: each live schedule
	dirByRun     = "sched-run/"  // sched-run/<run>/<id>: each live schedule, by the job it runs
	keySchedHead = "sched-head"  // written by every schedule write: its ModRevision is the head
	// The actions log (actions.go).
	dirActions   = "act/"     // act/<seq>: an entry, seq zero-padded so keys sort by it
	dirActExpiry = "act-exp/" // act-exp/<keep until>/<seq>: empty, by expiry (Unix ms, zero-padded)
	keyActHead   = "act-head" // the last seq given
)

// slotLayout formats a slot in its keys: fixed width for the years 0001 to
// 9999, so keys sort by time, and readable as the slot's run key.
const slotLayout = "2006-01-02T15:04:05Z"

// keys builds the keys of one prefix.
type keys struct{ prefix string }

func (k keys) cluster() string           { return k.prefix + keyCluster }
func (k keys) gen(job string) string     { return k.prefix + dirGen + escape(job) }
func (k keys) genDir() string            { return k.prefix + dirGen }
func (k keys) job(job string) string     { return k.prefix + dirJobs + escape(job) }
func (k keys) markers(job string) string { return k.prefix + dirMarkers + escape(job) + "/" }
func (k keys) running(job string) string { return k.prefix + dirRunning + escape(job) + "/" }
func (k keys) runningDir() string        { return k.prefix + dirRunning }
func (k keys) pauses() string            { return k.prefix + dirPauses }
func (k keys) beats() string             { return k.prefix + dirBeats }
func (k keys) catalog(job string) string { return k.prefix + dirCatalog + escape(job) }
func (k keys) spec(job string) string    { return k.prefix + dirSpec + escape(job) }
func (k keys) schedules() string         { return k.prefix + dirSchedules }
func (k keys) schedule(id string) string { return k.prefix + dirSchedules + id }
func (k keys) live() string              { return k.prefix + dirLive }
func (k keys) byRun(run string) string   { return k.prefix + dirByRun + escape(run) + "/" }
func (k keys) schedHead() string         { return k.prefix + keySchedHead }
func (k keys) actions() string           { return k.prefix + dirActions }
func (k keys) action(seq int64) string   { return fmt.Sprintf("%s%s%019d", k.prefix, dirActions, seq) }
func (k keys) actExpiry() string         { return k.prefix + dirActExpiry }
func (k keys) actHead() string           { return k.prefix + keyActHead }
func (k keys) actExpiryOf(keep, seq int64) string {
	return fmt.Sprintf("%s%s%019d/%019d", k.prefix, dirActExpiry, keep, seq)
}
func (k keys) beat(replica string) string {
	return k.prefix + dirBeats + escape(replica)
}

// marker, run and holder are the keys of job@slot's marker, its running
// copy and its holder key.
func (k keys) marker(job string, slot time.Time) string { return k.markers(job) + slotKey(slot) }
func (k keys) run(job string, slot time.Time) string    { return k.running(job) + slotKey(slot) }
func (k keys) holder(job string, slot time.Time) string {
	return k.prefix + dirHolders + escape(job) + "/" + slotKey(slot)
}

// pause is the key of job's pause; the empty job is the cluster's.
func (k keys) pause(job string) string {
	if job == "" {
		return k.prefix + keyPauseAll
	}
	return k.prefix + dirJobPause + escape(job)
}

// pauseJob returns the job whose pause key is key, and false for a key
// that is no pause.
func (k keys) pauseJob(key string) (string, bool) {
	if key == k.prefix+keyPauseAll {
		return "", true
	}
	name, ok := strings.CutPrefix(key, k.prefix+dirJobPause)
	if !ok {
		return "", false
	}
	job, err := unescape(name)
	return job, err == nil
}

// jobOf returns the job whose key under dir (dirJobs, dirGen, dirCatalog)
// is key.
func (k keys) jobOf(dir, key string) (string, error) {
	return unescape(strings.TrimPrefix(key, k.prefix+dir))
}

// slotKey formats slot, in UTC and to the second, as its keys hold it.
func slotKey(slot time.Time) string { return slot.UTC().Format(slotLayout) }

// keyable reports whether slot is in the years its keys can hold.
func keyable(slot time.Time) bool {
	y := slot.UTC().Year()
	return y >= 1 && y <= 9999
}

// slotOf returns the slot a marker key ends with.
func slotOf(key string) (time.Time, error) {
	return time.Parse(slotLayout, key[strings.LastIndexByte(key, '/')+1:])
}

// escape writes name with every byte but ASCII letters, digits, '-', '.'
// and '_' as %XX: it holds no '/', and different names stay different.
func escape(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// unescape is the inverse of escape.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errBadKey(s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", errBadKey(s)
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// stable reports whether key is a generation, job or spec key, which the
// store caches across calls.
func (k keys) stable(key string) bool {
	return strings.HasPrefix(key, k.prefix+dirGen) || strings.HasPrefix(key, k.prefix+dirJobs) ||
		strings.HasPrefix(key, k.prefix+dirSpec)
}

// runningJob returns the job whose running range key is in.
func (k keys) runningJob(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, k.prefix+dirRunning)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	job, err := unescape(name)
	return job, err == nil
}

// errBadKey is the error of a key name escape did not write.
func errBadKey(s string) error { return fmt.Errorf("etcdstore: %q is not an escaped name", s) }
