package scheduler

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testserver"
	"github.com/slotcron/slotcron/scheduler/internal/admin"
	"github.com/slotcron/slotcron/slotstore"
	"github.com/slotcron/slotcron/slotstore/memstore"
)

// send makes one request with a JSON body and headers, and returns the
// status and body.
func send(t *testing.T, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// paramsOf is the n of a digest run's params.
func paramsOf(t *testing.T, e event) int {
	var p struct{ N int }
	if err := e.run.Params(&p); err != nil {
		t.Errorf("params of %s: %v", e.run.Key(), err)
	}
	return p.N
}

// TestHTTPSchedules: a schedule created, changed, paused, resumed and
// deleted through the HTTP API while the replica runs: the first slot after
// each change follows it, and the API's errors carry their stable codes.
func TestHTTPSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port and waits for real slots")
	}
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	base, auth := "http://"+addr+"/api/schedules", []string{"Authorization", "Bearer s3cret"}
	_, rec, reg := rig(&recorder{}, "digest")
	s := replica(t, memstore.New(memstore.Options{}), "a", "http: {listen: \""+addr+"\", token: s3cret}", reg)
	stop := start(t, s)
	defer stop()
	poll.Until(t, 10*time.Second, "the API", func() error {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if code, body := send(t, "POST", base, `{"id":"t1","job":"digest","schedule":"* * * * * *"}`); code != http.StatusUnauthorized {
		t.Fatalf("a create without the token: %d %s", code, body)
	}
	code, body := send(t, "POST", base, `{"id":"t1","job":"digest","schedule":"61 * * * *"}`, auth...)
	if code != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid_schedule"`) || !strings.Contains(body, `"field":"schedule"`) {
		t.Fatalf("a create with a bad spec: %d %s", code, body)
	}
	if code, body = send(t, "POST", base, `{"id":"t1","job":"digest","schedule":"* * * * * *","params":{"n":1}}`, auth...); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	waitRun(t, rec, "t1", 1, time.Time{})
	if code, body = send(t, "PUT", base+"/t1", `{"job":"digest","schedule":"* * * * * *","params":{"n":2}}`, append(auth, "If-Match", `"7"`)...); code != http.StatusConflict || !strings.Contains(body, "version_mismatch") {
		t.Fatalf("a put at a stale version: %d %s", code, body)
	}
	code, body = send(t, "PUT", base+"/t1", `{"job":"digest","schedule":"*/2 * * * * *","params":{"n":2}}`, append(auth, "If-Match", `"1"`)...)
	changed := time.Now()
	if code != http.StatusOK || !strings.Contains(body, `"version":2`) {
		t.Fatalf("put: %d %s", code, body)
	}
	waitRun(t, rec, "t1", 2, changed)
	for _, e := range rec.snapshot() { // a slot claimed ahead before the change runs as claimed
		if n := paramsOf(t, e); e.run.Job == "t1" && e.run.Slot.After(changed.Add(slotstore.ClaimLead)) && (n != 2 || e.run.Slot.Second()%2 != 0) {
			t.Errorf("slot %s after the change ran with params %d", e.run.Slot, n)
		}
	}
	if code, body = send(t, "POST", base+"/t1/pause", `{"reason":"tenant on hold"}`, auth...); code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, body = send(t, "GET", base+"/t1", ""); code != http.StatusOK || !strings.Contains(body, `"paused":true`) {
		t.Fatalf("get: %d %s", code, body)
	}
	if code, body = send(t, "POST", base+"/t1/resume", "", auth...); code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, body = send(t, "DELETE", base+"/t1", "", auth...); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	deleted := time.Now()
	if code, body = send(t, "GET", base+"/t1", ""); code != http.StatusNotFound || !strings.Contains(body, "no_such_schedule") {
		t.Fatalf("get of a deleted schedule: %d %s", code, body)
	}
	time.Sleep(3 * time.Second)
	for _, e := range rec.snapshot() {
		if e.run.Job == "t1" && e.run.Slot.After(deleted) {
			t.Errorf("slot %s ran after the delete returned", e.run.Slot)
		}
	}
	if code, body = send(t, "GET", base+"?job=digest", ""); code != http.StatusOK || !strings.Contains(body, `"schedules":[]`) {
		t.Fatalf("list: %d %s", code, body)
	}
	// Made anew after its delete, and by a PUT: created both times.
	if code, body = send(t, "POST", base, `{"id":"t1","job":"digest","schedule":"@hourly"}`, auth...); code != http.StatusCreated || !strings.Contains(body, `"version":4`) {
		t.Fatalf("a create after the delete: %d %s", code, body)
	}
	if code, body = send(t, "PUT", base+"/t2", `{"job":"digest","schedule":"@hourly"}`, auth...); code != http.StatusCreated {
		t.Fatalf("a put that creates: %d %s", code, body)
	}
	if code, body = send(t, "PUT", base+"/t2", `{"job":"digest","schedule":"@daily"}`, auth...); code != http.StatusOK {
		t.Fatalf("a put that replaces: %d %s", code, body)
	}
	// Each write is in the actions log, by the token's name and role.
	code, body = send(t, "GET", strings.TrimSuffix(base, "schedules")+"actions?target=t1", "")
	var page struct{ Actions []admin.ActionView }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("actions: %d %s", code, body)
	}
	var got []string
	for _, a := range slices.Backward(page.Actions) {
		got = append(got, a.Kind+" "+strings.SplitN(a.Result, ":", 2)[0])
		if a.Who != "token" || a.Role != "admin" || a.Via != "http" {
			t.Errorf("an action by %q (%s, via %s), not the token's name and role", a.Who, a.Role, a.Via)
		}
	}
	want := []string{"schedule-create ok", "schedule-put slotstore", "schedule-put ok", "schedule-pause ok",
		"schedule-resume ok", "schedule-delete ok", "schedule-create ok"}
	if !slices.Equal(got, want) {
		t.Errorf("the actions on t1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// waitRun waits for a run of schedule id with params n of a slot after
// after.
func waitRun(t *testing.T, rec *recorder, id string, n int, after time.Time) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("a run of %s with params %d", id, n), func() error {
		for _, e := range rec.snapshot() {
			if e.run.Job == id && e.run.Slot.After(after) && paramsOf(t, e) == n {
				return nil
			}
		}
		return fmt.Errorf("%d runs, none of them", len(rec.snapshot()))
	})
}

// TestHTTPScheduleCalendars: a schedule's DST rule, calendars and max_runs
// over the HTTP API: a bad value is a 400 naming its field, and a good one
// reads back as written, with the end max_runs puts.
func TestHTTPScheduleCalendars(t *testing.T) {
	if testing.Short() {
		t.Skip("listens on a port")
	}
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	base, auth := "http://"+addr+"/api/schedules", []string{"Authorization", "Bearer s3cret"}
	_, _, reg := rig(&recorder{}, "digest")
	s := replica(t, memstore.New(memstore.Options{}), "a", "http: {listen: \""+addr+"\", token: s3cret}\n"+
		"calendars: {holidays: {dates: [\"2030-01-03\", \"2030-01-01\"]}}\ndefaults: {except: [holidays]}", reg)
	stop := start(t, s)
	defer stop()
	poll.Until(t, 10*time.Second, "the API", func() error {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	for _, c := range []struct{ body, field string }{
		{`"dst":{"gap":"sometimes"}`, "dst.gap"},
		{`"dst":{"repeat":"twice"}`, "dst.repeat"},
		{`"max_runs":3`, "max_runs"},
		{`"max_runs":-1,"start":"2030-01-01T00:00:00Z"`, "max_runs"},
		{`"except":["nope"]`, "except"},
	} {
		code, body := send(t, "PUT", base+"/c1", `{"job":"digest","schedule":"30 2 * * *",`+c.body+`}`, auth...)
		if code != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid_schedule"`) || !strings.Contains(body, `"field":"`+c.field+`"`) {
			t.Errorf("a put with %s: %d %s, want 400 naming %s", c.body, code, body, c.field)
		}
	}
	if code, body := send(t, "PUT", base+"/c1", `{"job":"digest","schedule":"*/5 * * * *","dst":{"gap":"skip"}}`, auth...); code != http.StatusBadRequest || !strings.Contains(body, `"field":"dst"`) {
		t.Errorf("a DST rule on a schedule that follows real time: %d %s", code, body)
	}
	// Daily at 02:30 in Berlin from 2030-01-01: the 1st and the 3rd are
	// holidays, so the fifth counted slot is on the 7th.
	put := `{"job":"digest","schedule":"30 2 * * *","timezone":"Europe/Berlin","dst":{"gap":"skip","repeat":"both"},` +
		`"except":["holidays"],"max_runs":5,"start":"2030-01-01T00:00:00Z"}`
	code, body := send(t, "PUT", base+"/c1", put, auth...)
	if code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, body)
	}
	var written, got admin.ScheduleJSON
	if err := json.Unmarshal([]byte(body), &written); err != nil {
		t.Fatal(err)
	}
	code, body = send(t, "GET", base+"/c1", "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("get: %d %s", code, body)
	}
	if got.DST == nil || *got.DST != (admin.DSTJSON{Gap: "skip", Repeat: "both"}) || !slices.Equal(got.Except, []string{"holidays"}) ||
		got.MaxRuns != 5 || got.Start != "2030-01-01T00:00:00Z" || got.End != "2030-01-07T01:30:00Z" {
		t.Errorf("read back: %s", body)
	}
	if !strings.Contains(body, `"dst":{"gap":"skip","repeat":"both"}`) || !strings.Contains(body, `"except":["holidays"]`) {
		t.Errorf("the fields as JSON: %s", body)
	}
	written.Paused = got.Paused
	if !reflect.DeepEqual(written, got) {
		t.Errorf("the put answered\n%+v\nthe get\n%+v", written, got)
	}
	// What was read, put back, is the same schedule: no new version.
	back, _ := json.Marshal(got)
	if code, body = send(t, "PUT", base+"/c1", string(back), auth...); code >= 300 || !strings.Contains(body, `"version":1,`) {
		t.Errorf("the schedule read, put back: %d %s", code, body)
	}
	// Left out, except is the defaults' and dst the default, spelled out
	// for a fixed-time schedule, so a read put back keeps both whatever the
	// writer's defaults; [] is no calendar, read as [] and so put back as
	// none.
	if code, body = send(t, "PUT", base+"/c2", `{"job":"digest","schedule":"30 2 * * *"}`, auth...); code != http.StatusCreated ||
		!strings.Contains(body, `"dst":{"gap":"shift","repeat":"first"}`) || !strings.Contains(body, `"except":["holidays"]`) ||
		strings.Contains(body, `"max_runs"`) {
		t.Errorf("a schedule without them: %d %s", code, body)
	}
	if code, body = send(t, "PUT", base+"/c3", `{"job":"digest","schedule":"30 2 * * *","except":[]}`, auth...); code != http.StatusCreated ||
		!strings.Contains(body, `"except":[]`) {
		t.Fatalf("a schedule with no calendar: %d %s", code, body)
	}
	var none admin.ScheduleJSON
	if _, body = send(t, "GET", base+"/c3", ""); json.Unmarshal([]byte(body), &none) != nil {
		t.Fatalf("get: %s", body)
	}
	back, _ = json.Marshal(none)
	if code, body = send(t, "PUT", base+"/c3", string(back), auth...); code >= 300 || !strings.Contains(body, `"version":1,`) || !strings.Contains(body, `"except":[]`) {
		t.Errorf("the schedule with no calendar, put back: %d %s", code, body)
	}
}
