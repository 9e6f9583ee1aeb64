package admin

import (
	"html/template"
	"net/http"

	"github.com/slotcron/slotcron/slotstore"
)

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
<title>slotcron · {{.Replica}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}
th,td{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap}
th{background:#f4f4f4}
.succeeded{color:#176f2c}.failed,.timeout,.abandoned{color:#b3261e}.running,.retrying{color:#1f5fbf}.skipped,.replaced,.released{color:#777}
</style></head><body>
<h1>slotcron</h1>
<p>replica <b>{{.Replica}}</b>{{if .Paused.All}} · <b>cluster paused</b>{{end}}</p>
<h2>Jobs</h2>
<table><tr><th>job</th><th>schedule</th><th>time zone</th><th>next slot (UTC)</th><th>overlap</th><th>paused</th></tr>
{{range .Jobs}}<tr><td>{{.Name}}</td><td><code>{{.Schedule}}</code></td><td>{{.Timezone}}</td><td>{{.Next}}</td><td>{{.Overlap}}</td><td>{{if .Paused}}yes{{end}}</td></tr>
{{end}}</table>
<h2>Recent slots</h2>
<table><tr><th>job</th><th>slot (UTC)</th><th>state</th><th>outcome</th><th>attempt</th><th>fence</th><th>holder</th><th>reason / error</th></tr>
{{range .History}}<tr><td>{{.Job}}</td><td>{{.Slot}}</td><td class="{{.State}}">{{.State}}{{if .Manual}} (manual){{end}}</td><td class="{{.Outcome}}">{{.Outcome}}</td><td>{{.Attempt}}</td><td>{{.Fence}}</td><td>{{.Holder}}</td><td>{{.Reason}} {{.Error}}</td></tr>
{{end}}</table>
</body></html>
`))

// dashboard renders the jobs and the latest slots as one page that
// refreshes itself; it shows what /api/jobs and /api/history return.
func (a *api) dashboard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, ok := a.store(w)
	if !ok {
		return
	}
	views, ps, err := a.jobViews(ctx, st)
	if err != nil {
		http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ms, err := st.History(ctx, slotstore.HistoryParams{Limit: 50})
	if err != nil {
		http.Error(w, "store unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	data := struct {
		Replica string
		Paused  slotstore.Pauses
		Jobs    []jobView
		History []MarkerView
	}{Replica: a.e.Replica(), Paused: ps, Jobs: views}
	for _, m := range ms {
		data.History = append(data.History, MarkerJSON(m))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = dashboardPage.Execute(w, data)
}
