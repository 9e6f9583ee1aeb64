// Package etcd links the etcd store kind into a binary: store.kind: etcd
// keeps slots in etcd (package slotstore/etcdstore), and duties elect with
// package leader/etcdleader. Import it for its side effect:
//
//	import _ "github.com/slotcron/slotcron/scheduler/etcd"
//
// It registers the kind with package storekind. The store.etcd block of
// the configuration is etcdstore.Options; in Go, set Config.Store to
// StoreConfig{Kind: "etcd", Options: etcdstore.Options{...}}. A store made
// with etcdstore.New on a client of yours, handed to the scheduler with
// WithStore, elects with the same elector.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotcron/slotcron/internal/optkey"
	"github.com/slotcron/slotcron/leader"
	"github.com/slotcron/slotcron/leader/etcdleader"
	"github.com/slotcron/slotcron/scheduler/storekind"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

func init() {
	storekind.Register("etcd", storekind.Kind[etcdstore.Options, *etcdstore.Store]{
		Open:       etcdstore.Open,
		Check:      check,
		CheckLease: checkLease,
		// Duties hold a term key beside the store's keys, on its client,
		// fenced by the revision that created it; followers are woken by
		// a watch.
		Elector: func(_ context.Context, st *etcdstore.Store, log *slog.Logger) (leader.Elector, error) {
			el, err := etcdleader.New(st.Client(), etcdleader.Options{Prefix: st.Prefix(), Clock: st.Now, FenceBase: st.FenceBase(),
				CheckBase: st.ClusterBase, Logger: log})
			if err != nil {
				return nil, fmt.Errorf("duties: %w", err)
			}
			return el, nil
		},
	})
}

// check is Options.Validate, and says that a file which chose etcd and
// lists no endpoints most likely left a ${VAR} unset: in Go no endpoints
// mean a local member.
func check(o etcdstore.Options) error {
	err := o.Validate()
	if len(o.Endpoints) == 0 {
		err = errors.Join(optkey.Errorf("", "store.kind is etcd but store.etcd.endpoints is empty (is its ${VAR} set?)"), err)
	}
	return err
}

// checkLease refuses a request timeout longer than a third of the shortest
// lease: a renewal or finish left unanswered by a frozen member or a dying
// leader is sent again only after it, and must still land within the
// holder's trust window.
func checkLease(o etcdstore.Options, shortest time.Duration, holder string) error {
	rt := o.RequestTimeout
	if rt <= 0 {
		rt = etcdstore.DefaultRequestTimeout
	}
	if rt <= shortest/3 {
		return nil
	}
	return optkey.Errorf("request_timeout", "%v is longer than a third of the shortest lease (%v, %s): a request "+
		"left unanswered must be sent again within the holder's trust window", rt, shortest, holder)
}
