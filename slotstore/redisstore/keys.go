package redisstore

import (
	"strconv"
	"strings"
)

// Every key of a job carries the job's name as its Cluster hash tag, so a
// job's markers, fence counter, generation and indexes live in one hash
// slot and one script can change them together:
//
//	<prefix>{<job>}:fence       string  the last fence issued
//	<prefix>{<job>}:gen         string  when the job's generation began (Unix ms)
//	<prefix>{<job>}:m:<slot>    hash    the marker of the slot (Unix seconds)
//	<prefix>{<job>}:slots       zset    slot -> slot, for History
//	<prefix>{<job>}:expiry      zset    slot -> when its marker expires (ms)
//	<prefix>{<job>}:running     zset    slot -> slot, of the running markers
//	<prefix>{<job>}:pruned      string  markers History found gone, for Prune
//	<prefix>{<job>}:spec        hash    the spec in force: fp, body, rev,
//	                                    replica, since (Unix ms) (catalog.go);
//	                                    for a schedule held as data also run,
//	                                    ver, seq and del (schedules.go)
//	<prefix>{<job>}:carriers    hash    replica -> its last enrolment of the
//	                                    spec in force (Unix ms)
//	<prefix>{<job>}:past        list    the specs in force before, newest
//	                                    first: netstrings of fp, rev,
//	                                    replica, since, until, body
//	<prefix>catalog             zset    names of the jobs with a spec, all
//	                                    of score 0, so they sort by name
//	<prefix>live                zset    the running and retrying markers of
//	                                    every job (a single server only)
//	<prefix>jobs                set     names of the jobs with markers
//	<prefix>pauses              set     paused jobs; "" for the whole cluster
//	<prefix>pausenotes{<prefix>pauses}
//	                            hash    job -> its pause's note; the pauses
//	                                    key is its hash tag (pause.go)
//	<prefix>beats               hash    replica -> its last beat (beat.go)
//
// The indexes of schedules held as data share the hash tag
// {<prefix>sched}, so in a Cluster they live together, apart from the
// jobs (schedules.go):
//
//	<prefix>sched:live{<prefix>sched}       zset    IDs of the live schedules,
//	                                                score 0, by name
//	<prefix>sched:run:<job>{<prefix>sched}  zset    the same, of those that run
//	                                                job (escaped as below)
//	<prefix>sched:seq{<prefix>sched}        zset    every schedule's ID -> the
//	                                                sequence number of its
//	                                                last write
//	<prefix>sched:head{<prefix>sched}       string  the last sequence number
//	<prefix>sched:ver{<prefix>sched}        hash    ID -> "<version> <run job>"
//	                                                as the indexes recorded it
//
// Schedule writes are published on the channel <prefix>schedules.
//
// The actions log's keys share the hash tag {<prefix>actions} (actions.go):
//
//	<prefix>actions:head{<prefix>actions}    string  the last Seq given
//	<prefix>actions:log{<prefix>actions}     zset    seq -> the entry
//	<prefix>actions:expiry{<prefix>actions}  zset    seq, scored by its
//	                                                 expiry (Unix ms)
//
// The job name is escaped so that it holds no brace (which would end or
// empty the hash tag) and no two names share keys.

// jobKeys are the keys of one job.
type jobKeys struct {
	tag                                        string // prefix of every key of the job
	fence, gen, slots, expiry, running, pruned string
	spec, carriers, past                       string // the job's catalog entry
	marker                                     string // prefix of the marker keys; append the slot
}

// keysOf returns the keys of job under prefix.
func keysOf(prefix, job string) jobKeys {
	tag := prefix + "{" + escape(job) + "}:"
	return jobKeys{
		tag:   tag,
		fence: tag + "fence", gen: tag + "gen", slots: tag + "slots", expiry: tag + "expiry", running: tag + "running",
		pruned: tag + "pruned", marker: tag + "m:", spec: tag + "spec", carriers: tag + "carriers", past: tag + "past",
	}
}

// markerKey is the key of the marker of slot, in Unix seconds.
func (k jobKeys) markerKey(slot int64) string { return k.marker + strconv.FormatInt(slot, 10) }

// liveKey is the store-wide index of running and retrying markers, or ""
// in a Cluster, where no key can be written together with every job's. Its
// members all have score 0 and sort by name: an 11-digit zero-padded slot
// (Unix seconds), then the marker's key, so a walk in reverse lexical order
// lists the newest slot first, and no two markers share a member.
func (s *Store) liveKey() string {
	if !s.single {
		return ""
	}
	return s.prefix + "live"
}

// jobsKey is the set of job names. It has no hash tag: in a Cluster it lives
// apart from every job, and only History and Prune read it.
func jobsKey(prefix string) string { return prefix + "jobs" }

// catalogKey is the index of the jobs with a catalog entry. It has no hash
// tag: on a single server enroll.lua adds to it, in a Cluster a ZADD sent in
// the enrolment's pipeline.
func catalogKey(prefix string) string { return prefix + "catalog" }

// parseMarkerKey returns the job and slot of a marker key of s.
func (s *Store) parseMarkerKey(key string) (string, int64, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+"{")
	if !ok {
		return "", 0, false
	}
	tag, slot, ok := strings.Cut(rest, "}:m:")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.ParseInt(slot, 10, 64)
	return unescaper.Replace(tag), n, err == nil
}

var (
	escaper   = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
	unescaper = strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")
)

// escape makes job safe inside a hash tag, reversibly.
func escape(job string) string { return escaper.Replace(job) }

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// hashSlot is the Cluster hash slot of every key of job: CRC16 (XMODEM) of
// its hash tag, modulo 16384, as the Redis Cluster specification defines it.
func hashSlot(job string) int {
	var crc uint16
	for _, b := range []byte(escape(job)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}
