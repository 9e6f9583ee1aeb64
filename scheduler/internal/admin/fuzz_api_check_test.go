package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slotcron/slotcron/slotstore"
)

// check asserts FuzzAPI's properties of one answered request.
func (rig *apiRig) check(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder, before, after apiState) {
	code, body := rec.Code, rec.Body.String()
	what := req.Method + " " + req.RequestURI
	if code >= 500 {
		t.Fatalf("%s: %d %s: a memory store never fails", what, code, body)
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("%s: %d with invalid JSON %q", what, code, body)
	}
	changed := !reflect.DeepEqual(before, after)
	if !changed {
		return
	}
	if rig.token == "" || !bearer(req.Header.Get("Authorization"), rig.token) {
		t.Fatalf("%s with Authorization %q: %d, and the store changed:\n%+v\nto\n%+v", what, req.Header.Get("Authorization"), code, before, after)
	}
	if req.Method != http.MethodPost {
		t.Fatalf("%s: %d, and the store changed", what, code)
	}
	m, grew := oneMore(before.Markers, after.Markers)
	pausesKept := reflect.DeepEqual(before.Pauses, after.Pauses)
	switch code {
	case http.StatusConflict:
		// A forbid job's trigger while it runs: its manual slot is recorded
		// skipped for overlap, as a scheduled one would be.
		if !grew || !pausesKept || m.Job != "solo" || m.State != slotstore.StateSkipped ||
			m.Reason != slotstore.ReasonOverlap || !m.Manual {
			t.Fatalf("%s: refused as busy, and the store changed:\n%+v\nto\n%+v", what, before, after)
		}
	case http.StatusAccepted:
		var out struct{ Job, Key string }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %d %q: %v", what, code, body, err)
		}
		if !grew || !pausesKept || m.Job != out.Job || !m.Manual || m.State != slotstore.StateDone ||
			m.Outcome != slotstore.Succeeded {
			t.Fatalf("%s: triggered %s, and the store changed:\n%+v\nto\n%+v", what, body, before, after)
		}
	case http.StatusOK: // pause or resume
		if !reflect.DeepEqual(before.Markers, after.Markers) {
			t.Fatalf("%s: %s, and the markers changed:\n%+v\nto\n%+v", what, body, before, after)
		}
	default:
		t.Fatalf("%s: %d %s, and the store changed:\n%+v\nto\n%+v", what, code, body, before, after)
	}
}

// bearer reports whether header presents token with the Bearer scheme,
// whose name is case-insensitive (RFC 9110).
func bearer(header, token string) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimLeft(got, " ") == token
}

// oneMore returns the one marker after has that before lacks, if after is
// before and that marker.
func oneMore(before, after []slotstore.Marker) (slotstore.Marker, bool) {
	for i, m := range after {
		if !slices.ContainsFunc(before, func(b slotstore.Marker) bool { return b.Job == m.Job && b.Slot.Equal(m.Slot) }) {
			rest := slices.Delete(slices.Clone(after), i, i+1)
			return m, slices.EqualFunc(rest, before, func(a, b slotstore.Marker) bool { return reflect.DeepEqual(a, b) })
		}
	}
	return slotstore.Marker{}, false
}
