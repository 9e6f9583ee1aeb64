package etcdstore

import (
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// suspectFor is how long a member that left a request unanswered is passed
// over. A frozen or partitioned member holds its TCP connection open, and
// gRPC's keepalive, which would drop it, pings no more often than every
// 10 s: until then the client's own round robin sends it every third
// request, each of which waits for its timeout. A 2 s lease cannot afford
// that twice.
const suspectFor = 10 * time.Second

// members sends the store's requests to one member at a time, through a
// client of that member alone, and moves to the next member when one
// leaves a request unanswered or has no leader; the member is then passed
// over for suspectFor. So a frozen member costs each store one request's
// timeout, not one in three of its requests. Watches and the process
// lease's keepalive stay on the store's client, which balances across
// every member.
type members struct {
	mu      sync.Mutex
	clients []*clientv3.Client // one per endpoint
	cur     int                // the member requests go to
	suspect []time.Time        // until when each member is passed over
}

// newMembers makes a client per endpoint with cfg's other settings. It
// returns nil for a single endpoint: there is no other member to move to.
func newMembers(cfg clientv3.Config) (*members, error) {
	if len(cfg.Endpoints) < 2 {
		return nil, nil
	}
	m := &members{suspect: make([]time.Time, len(cfg.Endpoints))}
	for _, e := range cfg.Endpoints {
		one := cfg
		one.Endpoints = []string{e}
		c, err := clientv3.New(one)
		if err != nil {
			m.close()
			return nil, err
		}
		m.clients = append(m.clients, c)
	}
	return m, nil
}

// pick returns the member to send a request to and its client.
func (m *members) pick() (int, *clientv3.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur, m.clients[m.cur]
}

// failed records that member i left a request unanswered, or had no
// leader: requests move to the next member not passed over (or, when every
// member is, the one whose suspicion ends first).
func (m *members) failed(i int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.suspect[i] = now.Add(suspectFor)
	if i != m.cur {
		return
	}
	best := -1
	for k := 1; k <= len(m.clients); k++ {
		j := (i + k) % len(m.clients)
		if !now.Before(m.suspect[j]) {
			best = j
			break
		}
		if best < 0 || m.suspect[j].Before(m.suspect[best]) {
			best = j
		}
	}
	m.cur = best
}

func (m *members) close() {
	for _, c := range m.clients {
		c.Close()
	}
}
