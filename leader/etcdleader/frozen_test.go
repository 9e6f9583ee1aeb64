package etcdleader_test

import (
	"testing"
)

// A frozen member (SIGSTOP, a stalled VM: connections open, nothing
// answered) does not stop the campaigns: requests it holds time out and
// go to the other members, and terms keep passing with growing fences,
// whether the frozen member is a follower or etcd's leader.
func TestFrozenMember(t *testing.T) {
	for _, which := range []string{"follower", "leader"} {
		t.Run(which, func(t *testing.T) {
			c := cluster(t)
			h := startHandOvers(t, c)
			h.await(t, 10, "before the freeze")
			m := c.Leader()
			if m == nil {
				t.Fatal("the cluster has no leader")
			}
			if which == "follower" {
				for _, o := range c.Members() {
					if o != m {
						m = o
						break
					}
				}
			}
			if err := m.Freeze(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Thaw() })
			h.await(t, 10, "while "+m.Name()+" is frozen")
			if err := m.Thaw(); err != nil {
				t.Fatal(err)
			}
			h.await(t, 10, "after "+m.Name()+" thawed")
			terms := h.check(t)
			t.Logf("%d terms, fences %d to %d", len(terms), terms[0].Fence, terms[len(terms)-1].Fence)
		})
	}
}
