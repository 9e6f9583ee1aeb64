package etcdstore

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slotcron/slotcron/slotstore"
)

// Escaped names hold no '/', differ when the names differ, and come back
// as they were.
func TestEscape(t *testing.T) {
	names := []string{"", "a", "a/b", "a%2Fb", "%", "%%", "job.name_1-2", "données", "{odd} job", "a b", "\x00\xff", "/"}
	seen := map[string]string{}
	for _, n := range names {
		e := escape(n)
		if strings.ContainsRune(e, '/') {
			t.Errorf("escape(%q) = %q holds a '/'", n, e)
		}
		if other, dup := seen[e]; dup {
			t.Errorf("escape(%q) = escape(%q) = %q", n, other, e)
		}
		seen[e] = n
		if back, err := unescape(e); err != nil || back != n {
			t.Errorf("unescape(escape(%q)) = %q, %v", n, back, err)
		}
	}
	for _, bad := range []string{"%", "%2", "%zz", "a%4"} {
		if _, err := unescape(bad); err == nil {
			t.Errorf("unescape(%q): no error", bad)
		}
	}
}

// A job's keys are a range no other job's keys fall in, and its marker
// keys sort by slot.
func TestKeyLayout(t *testing.T) {
	k := keys{prefix: "p/"}
	if strings.HasPrefix(k.markers("ab"), k.markers("a")) || strings.HasPrefix(k.markers("a/b"), k.markers("a")) {
		t.Errorf("the markers of %q fall in the range of %q's", "ab or a/b", "a")
	}
	slots := []time.Time{
		time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), time.Unix(1, 0), time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 29, 2, 0, 1, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	var ks []string
	for _, s := range slots {
		if !keyable(s) {
			t.Errorf("%v is not keyable", s)
		}
		mk := k.marker("j", s)
		ks = append(ks, mk)
		if got, err := slotOf(mk); err != nil || !got.Equal(s) {
			t.Errorf("slotOf(%q) = %v, %v; want %v", mk, got, err, s)
		}
	}
	if !slices.IsSorted(ks) {
		t.Errorf("marker keys do not sort by slot: %q", ks)
	}
	if keyable(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) || keyable(time.Time{}.Add(-time.Hour)) {
		t.Error("a slot outside the years 0001 to 9999 is keyable")
	}
	if job, ok := k.pauseJob(k.pause("")); !ok || job != "" {
		t.Errorf("pause key of the cluster: %q, %v", job, ok)
	}
	if job, ok := k.pauseJob(k.pause("a/b")); !ok || job != "a/b" {
		t.Errorf("pause key of a/b: %q, %v", job, ok)
	}
	if job, ok := k.runningJob(k.run("x/y", slots[2])); !ok || job != "x/y" {
		t.Errorf("running key of x/y: %q, %v", job, ok)
	}
	if job, err := k.jobOf(dirCatalog, k.catalog("x/y%")); err != nil || job != "x/y%" {
		t.Errorf("catalog key of x/y%%: %q, %v", job, err)
	}
	if k.stable(k.catalog("x")) || !k.stable(k.spec("x")) {
		t.Error("the store caches a catalog entry, or does not cache a spec key")
	}
}

// A won marker is written without its fence, which is then its key's
// ModRevision; a fence written out stays; a skipped marker has none.
func TestMarkerFence(t *testing.T) {
	m := slotstore.Marker{Job: "j", Slot: time.Unix(1700000000, 0).UTC(), State: slotstore.StateRunning, Holder: "r",
		Fence: pendingFence, Attempt: 1, ClaimedAt: time.Now(), LeaseEnd: time.Now().Add(time.Minute)}
	v := encodeMarker(m)
	if strings.Contains(string(v), "fence") {
		t.Errorf("won marker %s holds a fence", v)
	}
	got, err := decodeMarker(v, 42, 0)
	if err != nil || got.Fence != 42 {
		t.Fatalf("decoded fence %d, %v; want the ModRevision 42", got.Fence, err)
	}
	if got.ClaimedAt.Location() != time.UTC || !got.ClaimedAt.Equal(m.ClaimedAt) {
		t.Errorf("claimed at %v, want %v in UTC", got.ClaimedAt, m.ClaimedAt)
	}
	got.State = slotstore.StateDone
	if again, _ := decodeMarker(encodeMarker(got), 99, 0); again.Fence != 42 {
		t.Errorf("fence written out: %d, want 42", again.Fence)
	}
	skipped := slotstore.Marker{Job: "j", Slot: m.Slot, State: slotstore.StateSkipped, Reason: "missed"}
	if sk, _ := decodeMarker(encodeMarker(skipped), 7, 0); sk.Fence != 0 {
		t.Errorf("skipped marker's fence %d, want 0", sk.Fence)
	}
}

// An error text past the limit is cut at a character boundary and says
// so.
func TestTruncateError(t *testing.T) {
	if s := "short"; truncateError(s) != s {
		t.Error("a short error was changed")
	}
	long := strings.Repeat("é", maxErrorBytes)
	got := truncateError(long)
	if len(got) > maxErrorBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "(truncated)") {
		t.Errorf("truncated to %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-20:])
	}
}
