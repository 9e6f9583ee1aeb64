package etcdleader

import (
	"fmt"
	"strings"
	"time"
)

// The keys of one name:
//
//	<prefix>leader/<name>         the term: "<lease end> <holder>"; no etcd lease
//	<prefix>leader-holder/<name>  the holder; attached to its process's etcd lease
//
// Both are created by the Txn that wins a term, so both have that Txn's
// revision, the term's fence, as their CreateRevision; both are deleted
// together when the term is released or taken over. No term key starts
// with <prefix>leader-holder/, since every term key starts with
// <prefix>leader/, so no name's keys are another's.
type keys struct {
	term, holder string
}

func keysOf(prefix, name string) keys {
	return keys{term: prefix + "leader/" + name, holder: prefix + "leader-holder/" + name}
}

// untilLayout writes a lease end in UTC to the nanosecond, always 30 bytes
// long, so that byte order is time order: a renewal compares the stored
// value with its own and never moves a lease end back (see renew).
const untilLayout = "2006-01-02T15:04:05.000000000Z"

// termValue is what the term key holds: when its lease ends, by the clock
// of the process that wrote it, and the campaign that holds it.
type termValue struct {
	until  time.Time
	holder string
}

func (v termValue) encode() string {
	return v.until.UTC().Format(untilLayout) + " " + v.holder
}

func decodeTerm(b []byte) (termValue, error) {
	until, holder, ok := strings.Cut(string(b), " ")
	if !ok || len(until) != len(untilLayout) {
		return termValue{}, fmt.Errorf("%q is not \"<lease end> <holder>\"", b)
	}
	t, err := time.Parse(untilLayout, until)
	if err != nil {
		return termValue{}, fmt.Errorf("%q: lease end: %w", b, err)
	}
	return termValue{until: t, holder: holder}, nil
}
