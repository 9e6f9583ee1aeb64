package etcdstore_test

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// TestAuth: with auth enabled, a user whose role may read and write only
// the store's prefix runs the store's every operation; a wrong password
// fails Open with an error that names the endpoint and not the password.
func TestAuth(t *testing.T) {
	c := testserver.StartEtcd(t, testserver.EtcdConfig{Members: 1})
	const prefix, password = "app/", "s3cret-pw"
	root, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := t.Context()
	for _, step := range []func() error{
		func() error { _, err := root.RoleAdd(ctx, "root"); return err },
		func() error { _, err := root.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.RoleAdd(ctx, "slotcron"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "slotcron", prefix, clientv3.GetPrefixRangeEnd(prefix),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "slotcron", password); return err },
		func() error { _, err := root.UserGrantRole(ctx, "slotcron", "slotcron"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("set up auth: %v", err)
		}
	}

	s := openWith(t, etcdstore.Options{Endpoints: c.Endpoints(), Prefix: prefix, Username: "slotcron", Password: password})
	if _, err := s.Enroll(ctx, slotstore.EnrollParams{Jobs: []string{"auth"}}); err != nil {
		t.Fatalf("enroll: %v", err)
	}
	slot := nextHour()
	res := claim(t, s, "r", slotstore.ClaimRequest{Job: "auth", Slot: slot, Lease: time.Minute})
	won(t, res)
	ref := res[0].Claim.Ref
	if err := s.Renew(ctx, slotstore.RenewParams{Ref: ref, Lease: time.Minute}); err != nil {
		t.Errorf("renew: %v", err)
	}
	if err := s.Finish(ctx, slotstore.FinishParams{Ref: ref, Outcome: slotstore.Succeeded}); err != nil {
		t.Errorf("finish: %v", err)
	}
	if err := s.SetPause(ctx, slotstore.PauseParams{Job: "auth", Paused: true, By: "test"}); err != nil {
		t.Errorf("set pause: %v", err)
	}
	if p, err := s.Pauses(ctx); err != nil || len(p.Jobs) != 1 {
		t.Errorf("pauses: %+v, %v", p, err)
	}
	if err := s.Beat(ctx, slotstore.Beat{Replica: "r", TTL: time.Minute}); err != nil {
		t.Errorf("beat: %v", err)
	}
	if rs, err := s.Replicas(ctx); err != nil || len(rs) != 1 {
		t.Errorf("replicas: %+v, %v", rs, err)
	}
	if ms, err := s.History(ctx, slotstore.HistoryParams{}); err != nil || len(ms) != 1 {
		t.Errorf("history: %+v, %v", ms, err)
	}
	if _, err := s.Prune(ctx); err != nil {
		t.Errorf("prune: %v", err)
	}

	bad, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints(), Prefix: prefix, Username: "slotcron",
		Password: "not-" + password, DialTimeout: 2 * time.Second})
	if err == nil {
		bad.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), c.Endpoints()[0]) {
		t.Errorf("wrong password: %q, want the endpoint and not the password", err)
	}
	// Outside its prefix the user may do nothing: the store kept to it.
	other, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: c.Endpoints(), Prefix: "other/", Username: "slotcron",
		Password: password, DialTimeout: 2 * time.Second})
	if err == nil {
		other.Close()
		t.Error("Open under a prefix the user may not read succeeded")
	}
}
