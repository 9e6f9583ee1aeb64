package etcdstore

import "sync"

// entry is what a call knows of one key.
type entry struct {
	present bool
	value   []byte
	mod     int64 // ModRevision; pendingFence while written by an open transaction
	// fresh: read by this call, or checked by one of its transactions, so
	// a decision that writes nothing may answer from it. Entries from the
	// store's cache, or assumed absent, are checked by a transaction's
	// compares before anything is answered from them.
	fresh bool
}

// maxCached bounds each map of the cache; past it the cache forgets an
// entry at random. It only saves round trips: every entry it gives is
// checked by a transaction's compares.
const maxCached = 10000

// cache keeps, across calls, what the store last knew of keys it reads
// often: the generations, job keys and fingerprints of the specs in force
// (which rarely change) and the markers of the slots this store holds (so
// a renewal, finish or release is one round trip). Entries come out of it
// not fresh.
type cache struct {
	mu      sync.Mutex
	stable  map[string]entry // generations, job keys and spec keys
	markers map[string]entry // markers this store won or renewed
}

func (c *cache) init() {
	c.stable = map[string]entry{}
	c.markers = map[string]entry{}
}

func (c *cache) get(m map[string]entry, key string) (entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := m[key]
	e.fresh = false
	return e, ok
}

func (c *cache) put(m map[string]entry, key string, e entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := m[key]; !ok && len(m) >= maxCached {
		for k := range m {
			delete(m, k)
			break
		}
	}
	e.fresh = false
	m[key] = e
}

func (c *cache) drop(m map[string]entry, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(m, key)
}
