package etcdleader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errLeaseGone reports that the elector's etcd lease is lost, so the
// session can no longer hold a term.
var errLeaseGone = errors.New("the etcd lease of this process's campaigns is lost")

// maxAttempts bounds the attempts of one call that are in flight at once.
const maxAttempts = 3

// txn commits one Txn for a call that must not wait on one member: when an
// attempt has no answer after hedge, it sends another, which the client's
// balancer gives to the next member, and takes whichever answer comes
// first; the slower attempts are abandoned. An attempt that fails in a way
// that leaves the outcome unknown or says the request was not served (a
// dropped connection, a member without a leader, etcd's "request timed
// out": the gRPC code Unavailable) is sent again after a pause. The call
// ends with ctx. Every Txn of this package is safe to send twice: its
// compares make a repeat change nothing, or only what the first would
// have changed.
//
// With onLease, the Txn needs the session's etcd lease (it writes a holder
// key, or renews a term held under it): the call gives up as soon as the
// lease is lost, with an error wrapping errLeaseGone.
func (s *session) txn(ctx context.Context, hedge time.Duration, onLease bool, build func(clientv3.Txn) clientv3.Txn) (*clientv3.TxnResponse, error) {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // abandons the attempts still in flight
		wg.Wait()
	}()
	lost := context.Background() // never done
	if onLease {
		lost = s.lease.lost
		defer context.AfterFunc(lost, cancel)()
	}
	type answer struct {
		resp *clientv3.TxnResponse
		err  error
	}
	answers := make(chan answer)
	inFlight := 0
	send := func() {
		inFlight++
		wg.Go(func() {
			resp, err := build(s.d.c.Txn(cctx)).Commit()
			select {
			case answers <- answer{resp, err}:
			case <-cctx.Done():
			}
		})
	}
	send()
	next := time.NewTimer(hedge)
	defer next.Stop()
	pause := 5 * time.Millisecond
	var last error
	for {
		select {
		case a := <-answers:
			inFlight--
			if a.err == nil {
				return a.resp, nil
			}
			last = a.err
			if !retryable(a.err) && cctx.Err() == nil {
				return nil, a.err
			}
			if inFlight == 0 {
				next.Reset(pause) // send again after a pause
				pause = min(2*pause, hedge)
			}
		case <-next.C:
			if inFlight < maxAttempts {
				send()
			}
			next.Reset(hedge)
		case <-cctx.Done():
			err := ctx.Err()
			if lost.Err() != nil {
				err = errLeaseGone
			}
			if last != nil {
				return nil, fmt.Errorf("%w (an attempt failed: %w)", err, last)
			}
			return nil, err
		}
	}
}

// hedgeAfter is how long a call with lease to spare waits for an answer
// before it also asks another member: a quarter of the lease, so a
// renewal can try three members before a term's trust window ends, never
// less than 20 ms nor more than maxHedge.
func hedgeAfter(lease time.Duration) time.Duration {
	return min(max(lease/4, 20*time.Millisecond), maxHedge)
}

// maxHedge caps hedgeAfter: a healthy member answers in milliseconds, and a
// proposal lost with a leader that died is never answered, so a hand-over
// as etcd's leader dies waits at most this long, not a quarter of a long
// lease, before asking another member.
const maxHedge = time.Second

// retryable reports whether err leaves a request's outcome unknown or
// says it was not served, so another attempt may succeed.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	if st, ok := status.FromError(err); ok {
		return st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded
	}
	return false
}
