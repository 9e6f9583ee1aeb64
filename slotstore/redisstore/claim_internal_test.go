package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/testserver"
)

// TestAfterSlot: a claim's NotAfter goes to claim.lua as microseconds
// after the slot, in few bytes for the usual deadlines, and Lua's tonumber
// reads it back to the microsecond, as the script compares it with TIME.
func TestAfterSlot(t *testing.T) {
	slot := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	cases := []struct {
		notAfter time.Time
		want     string
	}{
		{time.Time{}, ""},
		{slot, "0"},
		{slot.Add(time.Minute), "6e7"},
		{slot.Add(90 * time.Second), "9e7"},
		{slot.Add(time.Millisecond), "1e3"},
		{slot.Add(100 * time.Microsecond), "100"},
		{slot.Add(time.Minute + time.Microsecond), "60000001"},
		{slot.Add(-time.Second), "-1e6"},
		{slot.Add(-1500 * time.Microsecond), "-1500"},
		{time.Unix(1, 0), strconv.FormatInt(1-slot.Unix(), 10) + "e6"},
		{time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), "54614628e8"},
	}
	r := testserver.StartRedis(t)
	s, err := Open(t.Context(), Options{Addrs: []string{r.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range cases {
		got := afterSlot(c.notAfter, slot)
		if got != c.want {
			t.Errorf("afterSlot(%v): %q, want %q", c.notAfter, got, c.want)
		}
		if got == "" {
			continue
		}
		// As claim.lua computes it.
		v, err := s.client.Eval(t.Context(), "return string.format('%.0f', tonumber(ARGV[1]) * 1000000 + tonumber(ARGV[2]))", nil,
			strconv.FormatInt(slot.Unix(), 10), got).Text()
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.FormatInt(c.notAfter.UnixMicro(), 10); v != want {
			t.Errorf("NotAfter %v sent as %q: Lua reads %s us, want %s", c.notAfter, got, v, want)
		}
	}
}
