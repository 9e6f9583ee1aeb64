// Package netclock reads the time of a server that has no clock API but
// answers HTTP: the Date header every Go HTTP server sets (RFC 9110,
// whole seconds). Watching the header turn from one second to the next
// places the server's second boundary on this process's monotonic clock to
// within a round trip and the probe interval, so the server's time is
// known to a few tens of milliseconds on a local network, and from then on
// it is carried forward by the monotonic clock: a step of this host's wall
// clock does not move it.
//
// The etcd store and elector use it as their clock: etcd has no clock a
// client can read, and its members, servers kept in time by NTP, are the
// one clock every replica can share.
package netclock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultProbeEvery is the gap between two probes while watching for
	// the second to turn.
	DefaultProbeEvery = 10 * time.Millisecond
	// DefaultResync is how often Run measures again: the monotonic clock
	// drifts from true time by at most a few parts in 10⁵, some tens of
	// milliseconds an hour.
	DefaultResync = 5 * time.Minute
)

// Options configure a Clock.
type Options struct {
	// URLs are the servers to read, tried in turn until one answers;
	// required. Each is fetched with GET.
	URLs []string
	// Client sends the probes; nil means a client with a 2 s timeout.
	Client *http.Client
	// ProbeEvery and Resync: zero means the defaults.
	ProbeEvery, Resync time.Duration
	// Logger receives a line per measurement (DEBUG) and per failure
	// (WARN); nil discards them.
	Logger *slog.Logger
}

// Clock is a server's time, as measured by Sync, carried forward by this
// process's monotonic clock. Its zero value is not usable; New makes one.
type Clock struct {
	o Options

	mu     sync.Mutex
	base   time.Time // the server's time at at
	at     time.Time // this process's clock when the server's was base, with its monotonic reading
	synced bool
	spread time.Duration // how far off the measurement may be, either way
	last   time.Time     // the latest time Now returned
	lastAt time.Time     // this process's clock then, with its monotonic reading
}

// slew is how much slower than this process's monotonic clock Now runs
// while a measurement has placed the server behind the time Now last
// returned: Now neither goes back nor stands still, and catches up with
// the server at a tenth of real time.
const slew = 0.9

// Age is how long ago the last measurement was made, and false before the
// first.
func (c *Clock) Age() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.at), c.synced
}

// New returns a clock of the servers o.URLs name. It measures nothing:
// call Sync before Now, and Run to measure again now and then.
func New(o Options) (*Clock, error) {
	if len(o.URLs) == 0 {
		return nil, errors.New("netclock: no URL")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 2 * time.Second}
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = DefaultProbeEvery
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Clock{o: o}, nil
}

// Now is the server's time now: the time of the last measurement plus the
// monotonic time since. Before the first Sync it is time.Now. It never
// goes back, nor stands still: when a measurement places the server behind
// the time Now last returned, Now runs at nine tenths of real time until
// the server's time catches up with it.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		return time.Now()
	}
	local := time.Now()
	now := c.base.Add(local.Sub(c.at))
	if !c.lastAt.IsZero() {
		floor := c.last.Add(time.Duration(slew * float64(local.Sub(c.lastAt))))
		if now.Before(floor) {
			now = floor
		}
	}
	c.last, c.lastAt = now, local
	return now
}

// Offset is how far the server's clock is ahead of this host's wall clock
// now (negative when behind), and how far the measurement may be off
// either way; zero and false before the first Sync.
func (c *Clock) Offset() (offset, spread time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		return 0, 0, false
	}
	now := time.Now()
	return c.base.Add(now.Sub(c.at)).Sub(now.Round(0)), c.spread, true
}

// Sync measures the servers' time: it probes each server, all at once,
// until its Date header turns to the next second, about a second of
// probes, and places that boundary between the last probe sent before it
// and the first reply after it. Of the servers that give a measurement it
// takes the median (the lower of the middle two for an even count), so
// one server whose clock is off does not move the clock, and every Clock
// of the same servers, in whatever order, takes the same; it logs a
// warning when the servers disagree by more than a second.
func (c *Clock) Sync(ctx context.Context) error {
	type result struct {
		url      string
		base, at time.Time
		spread   time.Duration
		err      error
	}
	results := make([]result, len(c.o.URLs))
	var wg sync.WaitGroup
	for i, url := range c.o.URLs {
		wg.Go(func() {
			r := result{url: url}
			r.base, r.at, r.spread, r.err = c.measure(ctx, url)
			results[i] = r
		})
	}
	wg.Wait()
	c.o.Client.CloseIdleConnections() // nothing outlives a measurement
	var ok []result
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return fmt.Errorf("netclock: read the time of %v: %w", c.o.URLs, errors.Join(errs...))
	}
	// A measurement's offset is the server's time less this host's then.
	offset := func(r result) time.Duration { return r.base.Sub(r.at.Round(0)) }
	slices.SortFunc(ok, func(a, b result) int { return cmp.Compare(offset(a), offset(b)) })
	m := ok[(len(ok)-1)/2]
	if d := offset(ok[len(ok)-1]) - offset(ok[0]); d > time.Second {
		c.o.Logger.Warn("the store's servers disagree on the time", "by", d, "ahead", ok[len(ok)-1].url, "behind", ok[0].url)
	}
	c.mu.Lock()
	c.base, c.at, c.spread, c.synced = m.base, m.at, m.spread, true
	c.mu.Unlock()
	off, _, _ := c.Offset()
	c.o.Logger.Debug("store clock measured", "server", m.url, "offset", off, "spread", m.spread, "servers", len(ok))
	return nil
}

// Run measures again every Resync until ctx ends; a failed measurement
// keeps the last one and is logged. Several Runs may share a clock: one
// skips a measurement another made less than half a Resync ago.
func (c *Clock) Run(ctx context.Context) {
	t := time.NewTicker(c.o.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if age, ok := c.Age(); ok && age < c.o.Resync/2 {
			continue
		}
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.o.Logger.Warn("measuring the store's clock failed; keeping the last measurement", "err", err)
		}
	}
}

// probe is one request: sent and received on this process's clock, and
// the second the server's Date header named.
type probe struct {
	sent, got time.Time
	date      time.Time
}

// measure finds the instant, on this process's clock, at which url's Date
// turns to the next second.
func (c *Clock) measure(ctx context.Context, url string) (base, at time.Time, spread time.Duration, err error) {
	first, err := c.probe(ctx, url)
	if err != nil {
		return base, at, 0, err
	}
	// The second turns within a second and a round trip of the first
	// reply; give up after two.
	deadline := first.got.Add(2*time.Second + 2*first.got.Sub(first.sent))
	last := first
	for {
		select {
		case <-ctx.Done():
			return base, at, 0, ctx.Err()
		case <-time.After(c.o.ProbeEvery):
		}
		p, err := c.probe(ctx, url)
		if err != nil {
			return base, at, 0, err
		}
		switch {
		case p.date.Equal(last.date):
			last = p
		case p.date.Equal(last.date.Add(time.Second)):
			// The server read its clock at p.date's first instant or
			// later while serving p, and earlier than that while serving
			// last: the turn lies between last's sending and p's reply.
			// Its midpoint errs by at most half that span.
			span := p.got.Sub(last.sent)
			return p.date, last.sent.Add(span / 2), span / 2, nil
		default:
			// A jump (a server that stepped its clock, or replies from two
			// servers): start again from this probe.
			last = p
		}
		if p.got.After(deadline) {
			return base, at, 0, fmt.Errorf("%s: its Date did not turn to the next second within %v", url, deadline.Sub(first.sent))
		}
	}
}

func (c *Clock) probe(ctx context.Context, url string) (probe, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return probe{}, err
	}
	sent := time.Now()
	resp, err := c.o.Client.Do(req)
	got := time.Now()
	if err != nil {
		return probe{}, err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return probe{}, fmt.Errorf("%s: Date header %q: %w", url, resp.Header.Get("Date"), err)
	}
	return probe{sent: sent, got: got, date: date}, nil
}
