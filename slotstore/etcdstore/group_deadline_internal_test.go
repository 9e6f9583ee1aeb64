package etcdstore

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// A group's transaction runs to the latest deadline of its members
// (groupContext): a member whose own context is alive for minutes is not
// failed, unsent, by another member's deadline that ends before the send.
func TestGroupOutlivesAMembersDeadline(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, Options{Endpoints: testserver.SharedEtcd(t).Endpoints(),
		Prefix: fmt.Sprintf("group-ctx-%d-%d/", os.Getpid(), time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	short, cancel2 := context.WithTimeout(ctx, time.Millisecond)
	defer cancel2()
	time.Sleep(2 * time.Millisecond) // expires after takeGroup looked, before (or while) commit sends
	mk := func(c context.Context, k string) *grouped {
		key := s.k.prefix + k
		return &grouped{ctx: c, op: "finish", key: key, order: []string{key}, writes: map[string]write{key: {value: []byte("x")}}}
	}
	a, b := mk(long, "a"), mk(short, "b")
	s.sendGroup([]*grouped{a, b})
	t.Logf("member with a minute left: err %v; resent: %v; as the caller sees it: %v", a.err, s.unanswered(a.ctx, a.err), s.fail("finish", a.err))
	if a.err != nil && !s.unanswered(a.ctx, a.err) && long.Err() == nil {
		t.Errorf("a member whose context is alive failed with another member's deadline, not to be sent again: %v", a.err)
	}
}
