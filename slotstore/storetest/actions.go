package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotcron/slotcron/slotstore"
)

// action is an entry of the actions log by who, of kind on target, kept
// for an hour.
func action(who, kind, target string) slotstore.Action {
	return slotstore.Action{Who: who, Role: "operator", Via: "http", Kind: kind, Target: target, Result: "ok",
		Retain: time.Hour}
}

// appendOK appends a and returns the stored entry, failing the test on an
// error.
func appendOK(t *testing.T, s slotstore.Store, a slotstore.Action) slotstore.Action {
	t.Helper()
	got, err := s.AppendAction(t.Context(), a)
	if err != nil {
		t.Fatalf("append action %+v: %v", a, err)
	}
	return got
}

// listActions lists the entries p selects, failing the test on an error.
func listActions(t *testing.T, s slotstore.Store, p slotstore.ActionsParams) []slotstore.Action {
	t.Helper()
	got, err := s.Actions(t.Context(), p)
	if err != nil {
		t.Fatalf("actions %+v: %v", p, err)
	}
	return got
}

// seqs returns the Seq of each entry.
func seqs(as []slotstore.Action) []int64 {
	out := make([]int64, len(as))
	for i, a := range as {
		out[i] = a.Seq
	}
	return out
}

// sameAction reports whether two entries are equal, At to the instant.
func sameAction(a, b slotstore.Action) bool {
	return a.Seq == b.Seq && a.At.Equal(b.At) && a.Who == b.Who && a.Role == b.Role && a.Via == b.Via &&
		a.Kind == b.Kind && a.Target == b.Target && a.Reason == b.Reason && a.Result == b.Result &&
		a.Detail == b.Detail && a.Retain == b.Retain
}

// wantActions fails the test unless got lists want's entries, in order.
func wantActions(t *testing.T, what string, got []slotstore.Action, want ...slotstore.Action) {
	t.Helper()
	if !slices.EqualFunc(got, want, sameAction) {
		t.Errorf("%s: listed %v, want %v\ngot  %+v\nwant %+v", what, seqs(got), seqs(want), got, want)
	}
}

// testActionsAppend: an append returns the entry as stored, with an
// increasing Seq and the store's time, whatever Seq and At it was given;
// Actions lists the entries as they were returned, newest first; text
// round-trips byte for byte, at its bounds too; after Close both calls
// fail with ErrClosed.
func testActionsAppend(t *testing.T, s slotstore.Store) {
	if got := listActions(t, s, slotstore.ActionsParams{}); len(got) != 0 {
		t.Fatalf("a new store lists actions %+v", got)
	}
	odd := slotstore.Action{
		Seq: 1 << 40, At: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
		Who: strings.Repeat("é", 100), Role: strings.Repeat("r", 32), Via: "cli", Kind: strings.Repeat("k", 64),
		Target: "{job} \"with\" 'quotes' % \\ " + strings.Repeat("t", 270), Reason: strings.Repeat("ü", 500),
		Result: "failed: " + strings.Repeat("x", 992), Detail: "2026-11-29T02:00:00Z..2026-11-30T02:00:00Z",
		Retain: 87660 * time.Hour,
	}
	plain := []slotstore.Action{action("alice", "pause", "a"), odd, action("slotcron", "pause", "")}
	plain[2].Role, plain[2].Via = "", "slotcron"
	var stored []slotstore.Action
	for _, a := range plain {
		lo := time.Now()
		got := appendOK(t, s, a)
		within(t, "At of "+a.Kind, got.At, lo, time.Now())
		want := a
		want.Seq, want.At = got.Seq, got.At
		if !sameAction(got, want) {
			t.Errorf("append %+v returned %+v", a, got)
		}
		if got.Seq <= 0 || (len(stored) > 0 && got.Seq <= stored[len(stored)-1].Seq) {
			t.Errorf("append %d: Seq %d after %v", len(stored), got.Seq, seqs(stored))
		}
		stored = append(stored, got)
	}
	wantActions(t, "all", listActions(t, s, slotstore.ActionsParams{}), stored[2], stored[1], stored[0])

	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.AppendAction(t.Context(), plain[0]); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("append action after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Actions(t.Context(), slotstore.ActionsParams{}); !errors.Is(err, slotstore.ErrClosed) {
		t.Errorf("actions after Close: %v, want ErrClosed", err)
	}
}

// testActionsInvalid: an entry with a required field empty, a field over
// its bound or not text, or a Retain out of bounds is ErrInvalid naming
// the field, and appends nothing; bad paging parameters are ErrInvalid.
func testActionsInvalid(t *testing.T, s slotstore.Store) {
	ctx := t.Context()
	bad := map[string]func(a *slotstore.Action){
		"who":    func(a *slotstore.Action) { a.Who = "" },
		"role":   func(a *slotstore.Action) { a.Role = strings.Repeat("r", 33) },
		"via":    func(a *slotstore.Action) { a.Via = "" },
		"kind":   func(a *slotstore.Action) { a.Kind = strings.Repeat("é", 33) },
		"target": func(a *slotstore.Action) { a.Target = "nul\x00byte" },
		"reason": func(a *slotstore.Action) { a.Reason = strings.Repeat("x", 1001) },
		"result": func(a *slotstore.Action) { a.Result = "" },
		"detail": func(a *slotstore.Action) { a.Detail = "\xff not utf-8" },
		"retain": func(a *slotstore.Action) { a.Retain = 0 },
	}
	for field, change := range bad {
		a := action("alice", "pause", "a")
		change(&a)
		_, err := s.AppendAction(ctx, a)
		if !errors.Is(err, slotstore.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("append action with a bad %s: %v, want ErrInvalid naming %s", field, err, field)
		}
	}
	for _, retain := range []time.Duration{-time.Second, 87661 * time.Hour} {
		a := action("alice", "pause", "a")
		a.Retain = retain
		if _, err := s.AppendAction(ctx, a); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("append action with retain %v: %v, want ErrInvalid", retain, err)
		}
	}
	if got := listActions(t, s, slotstore.ActionsParams{}); len(got) != 0 {
		t.Errorf("refused appends left %+v", got)
	}
	for _, p := range []slotstore.ActionsParams{{Before: -1}, {Limit: -1}, {Limit: 1001}} {
		if _, err := s.Actions(ctx, p); !errors.Is(err, slotstore.ErrInvalid) {
			t.Errorf("actions %+v: %v, want ErrInvalid", p, err)
		}
	}
}

// testActionsFilters: Who, Kind and Target select exact values, alone and
// together; Since selects the entries appended at or after it by the
// store's clock; Limit keeps the newest.
func testActionsFilters(t *testing.T, s slotstore.Store) {
	a := appendOK(t, s, action("alice", "pause", "a"))
	b := appendOK(t, s, action("bob", "pause", "b"))
	c := appendOK(t, s, action("alice", "trigger", "a"))
	d := appendOK(t, s, action("alice", "pause", ""))
	waitStoreTime(t, s, "actions-clock", d.At.Add(10*time.Millisecond))
	e := appendOK(t, s, action("bob", "trigger", "ab"))
	f := appendOK(t, s, action("alic", "pause", "a"))
	list := func(p slotstore.ActionsParams) []slotstore.Action { return listActions(t, s, p) }
	wantActions(t, "who alice", list(slotstore.ActionsParams{Who: "alice"}), d, c, a)
	wantActions(t, "kind pause", list(slotstore.ActionsParams{Kind: "pause"}), f, d, b, a)
	wantActions(t, "target a", list(slotstore.ActionsParams{Target: "a"}), f, c, a)
	wantActions(t, "alice's pauses of a", list(slotstore.ActionsParams{Who: "alice", Kind: "pause", Target: "a"}), a)
	wantActions(t, "who nobody", list(slotstore.ActionsParams{Who: "nobody"}))
	wantActions(t, "since e", list(slotstore.ActionsParams{Since: e.At}), f, e)
	wantActions(t, "bob's since e", list(slotstore.ActionsParams{Since: e.At, Who: "bob"}), e)
	wantActions(t, "since the future", list(slotstore.ActionsParams{Since: never}))
	wantActions(t, "the newest two", list(slotstore.ActionsParams{Limit: 2}), f, e)
	wantActions(t, "alice's before c", list(slotstore.ActionsParams{Who: "alice", Before: c.Seq}), a)
	wantActions(t, "before the first", list(slotstore.ActionsParams{Before: a.Seq}))
	wantActions(t, "before a Seq not yet given", list(slotstore.ActionsParams{Before: f.Seq + 1000}), f, e, d, c, b, a)
}

// testActionsPages: paging by Before over several pages, with and without
// a filter, lists every entry once, newest first.
func testActionsPages(t *testing.T, s slotstore.Store) {
	var all, bobs []slotstore.Action
	for i := range 23 {
		who := []string{"alice", "bob", "carol"}[i%3]
		a := appendOK(t, s, action(who, "trigger", fmt.Sprintf("job-%d", i)))
		all = append([]slotstore.Action{a}, all...)
		if who == "bob" {
			bobs = append([]slotstore.Action{a}, bobs...)
		}
	}
	for _, tc := range []struct {
		p    slotstore.ActionsParams
		want []slotstore.Action
	}{
		{slotstore.ActionsParams{Limit: 5}, all},
		{slotstore.ActionsParams{Limit: 23}, all},
		{slotstore.ActionsParams{Limit: 1}, all},
		{slotstore.ActionsParams{Limit: 3, Who: "bob"}, bobs},
	} {
		var got []slotstore.Action
		p := tc.p
		for pages := 0; ; pages++ {
			page := listActions(t, s, p)
			if len(page) > p.Limit || pages > 30 {
				t.Fatalf("paging %+v: page %d of %d entries", tc.p, pages, len(page))
			}
			got = append(got, page...)
			if len(page) < p.Limit {
				break
			}
			p.Before = page[len(page)-1].Seq
		}
		wantActions(t, fmt.Sprintf("pages of %+v", tc.p), got, tc.want...)
	}
}

// testActionsConcurrent: appends from many goroutines at once each get
// their own Seq, increasing in each goroutine's order, and are all listed.
func testActionsConcurrent(t *testing.T, s slotstore.Store) {
	const writers, each = 8, 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for w := range writers {
		wg.Go(func() {
			var last int64
			for i := range each {
				a, err := s.AppendAction(t.Context(), action(fmt.Sprintf("w%d", w), "trigger", fmt.Sprint(i)))
				if err != nil {
					t.Errorf("writer %d, append %d: %v", w, i, err)
					return
				}
				if a.Seq <= last {
					t.Errorf("writer %d, append %d: Seq %d after its %d", w, i, a.Seq, last)
				}
				last = a.Seq
				mu.Lock()
				if other, dup := seen[a.Seq]; dup {
					t.Errorf("Seq %d given to %s and to writer %d's append %d", a.Seq, other, w, i)
				}
				seen[a.Seq] = fmt.Sprintf("writer %d's append %d", w, i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got := listActions(t, s, slotstore.ActionsParams{Limit: 1000})
	if len(got) != writers*each || len(seen) != writers*each {
		t.Fatalf("%d entries listed and %d Seqs returned for %d appends", len(got), len(seen), writers*each)
	}
	for i, a := range got {
		if i > 0 && a.Seq >= got[i-1].Seq {
			t.Fatalf("listed out of order: %v", seqs(got))
		}
		if seen[a.Seq] == "" {
			t.Errorf("listed Seq %d, which no append returned", a.Seq)
		}
	}
}

// testActionsPrune: Prune deletes the entries whose At + Retain is before
// the store's clock, counts them, and keeps the others.
func testActionsPrune(t *testing.T, s slotstore.Store) {
	short := action("alice", "pause", "a")
	short.Retain = shortLease
	gone := appendOK(t, s, short)
	long := action("alice", "resume", "a")
	long.Retain = longLease
	kept := appendOK(t, s, long)
	year := appendOK(t, s, action("bob", "trigger", "b"))
	waitStoreTime(t, s, "actions-clock", gone.At.Add(shortLease+time.Millisecond))
	if n, err := s.Prune(t.Context()); err != nil || n != 1 {
		t.Errorf("prune: %d, %v; want 1 (the entry past its retention)", n, err)
	}
	wantActions(t, "after prune", listActions(t, s, slotstore.ActionsParams{}), year, kept)
	if n, err := s.Prune(t.Context()); err != nil || n != 0 {
		t.Errorf("prune again: %d, %v; want 0", n, err)
	}
	after := appendOK(t, s, action("carol", "pause", ""))
	if after.Seq <= year.Seq {
		t.Errorf("an append after prune got Seq %d, not after %d", after.Seq, year.Seq)
	}
}
