package etcdleader_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// Finding 3. Package leader's second guarantee: every term's fence is above
// every earlier term's, "including across a restart of the store that
// loses its data". An etcd whose data is lost comes back as a new cluster
// whose revisions start near 1 again (a single member on an emptyDir, a
// cluster rebuilt from nothing), and a term's fence is that revision (plus
// Options.FenceBase, zero unless the caller sets one): the first term on
// the new cluster is fenced below the last term on the old one, so a
// resource that kept the old fence refuses every leader from then on.
// Redis and PostgreSQL floor their fences with the store's clock for this
// case; New's zero Options do nothing of the kind, and the package
// documentation names only a restored snapshot.
func TestReview2FencesFallBackWhenTheClusterLosesItsData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two etcd clusters")
	}
	prefix := newPrefix()
	lead := func(c *testserver.EtcdCluster, history int) int64 {
		cl := newClient(t, c.Endpoints()...)
		for i := range history { // the old cluster's life: other writes
			if _, err := cl.Put(t.Context(), prefix+"history", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		e := elector(t, cl, etcdleader.Options{Prefix: prefix, Logger: quiet})
		terms, _, stop := campaign(t, e, leader.Params{Name: "fanout", Replica: "A", Lease: 2 * time.Second})
		term := receive(t, terms, 20*time.Second, "term")
		stop()
		return term.Fence
	}
	old := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	before := lead(old, 100)
	old.Stop() // its data is gone: the cluster comes back empty
	fresh := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	after := lead(fresh, 0)
	if after <= before {
		t.Errorf("the first term after the store lost its data has fence %d, not above the last term's %d", after, before)
	}
}
