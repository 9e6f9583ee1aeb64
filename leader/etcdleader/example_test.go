package etcdleader_test

import (
	"context"
	"log"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
)

// A client of every member, with the deadlines and keepalives New asks
// for, and one duty led by whichever replica wins.
func Example() {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            []string{"https://etcd-0:2379", "https://etcd-1:2379", "https://etcd-2:2379"},
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // after Lead has returned

	e, err := etcdleader.New(c, etcdleader.Options{})
	if err != nil {
		log.Fatal(err)
	}
	host, _ := os.Hostname()
	ctx := context.Background() // cancelled at shutdown
	err = e.Lead(ctx, leader.Params{Name: "fanout", Replica: host, Lease: 5 * time.Second},
		func(ctx context.Context, t leader.Term) {
			<-ctx.Done() // serve the duty, passing t.Fence to what it writes
		})
	if err != nil {
		log.Fatal(err)
	}
}
