package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotcron/slotcron/internal/poll"
	"github.com/slotcron/slotcron/internal/testlog"
	"github.com/slotcron/slotcron/internal/testserver"
)

// The shipped rules are valid, and pass their unit tests: every alert on
// synthetic series, with the labels and annotations it must have.
func TestAlertRulesWithPromtool(t *testing.T) {
	promtool := lookPath(t, "promtool", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/alerts.yaml"},
		{"test", "rules", "prometheus/alerts_test.yaml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Two replicas of the reference binary share one SQLite file, one job
// failing every second and one succeeding, scraped by a real Prometheus
// that loads the shipped rules. The failing job's alert fires naming the job
// in job_name (where the scrape job's name is in job, as Prometheus has
// it), and no alert names the healthy job. Each dashboard query is valid
// PromQL against the same Prometheus.
func TestAlertsOnRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference binary and starts Prometheus")
	}
	prometheus := lookPath(t, "prometheus", "prometheus")
	dir := t.TempDir()

	bin := filepath.Join(dir, "scheduler")
	began := time.Now()
	build := exec.Command(lookPath(t, "go", "golang-go"), "build", "-o", bin, "./cmd/scheduler")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/scheduler: %v\n%s", err, out)
	}
	t.Logf("built ./cmd/scheduler in %v", time.Since(began).Round(time.Millisecond))

	// The demo's fail job fails every time; hello succeeds.
	config := filepath.Join(dir, "slotcron.yaml")
	writeFile(t, config, fmt.Sprintf(`replica: ${SLOTCRON_REPLICA}
store: {kind: sqlite, sqlite: {path: %q}}
http: {listen: "127.0.0.1:${SLOTCRON_TEST_PORT}"}
log: {format: json, level: info}
shutdown_grace: 2s
jobs:
  failing: {run: fail, schedule: "* * * * * *"}
  healthy: {run: hello, schedule: "* * * * * *"}
`, filepath.Join(dir, "slotcron.db")))
	var targets []string
	for _, name := range []string{"a", "b"} {
		targets = append(targets, startServer(t, name, func(port int) *exec.Cmd {
			cmd := exec.Command(bin, "run", "--config", config)
			cmd.Env = append(os.Environ(), "SLOTCRON_REPLICA="+name, fmt.Sprintf("SLOTCRON_TEST_PORT=%d", port))
			return cmd
		}, "/metrics"))
	}

	// The shipped rules, with every for: set to 0s so an alert fires at the
	// first evaluation that finds its condition, and rules evaluated every
	// second: the alerts' windows (an hour, 15 minutes) can stay as shipped,
	// since increase() sees a counter grow within seconds.
	rules, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules = regexp.MustCompile(`(?m)^(\s+)for: \S+$`).ReplaceAll(rules, []byte("${1}for: 0s"))
	writeFile(t, filepath.Join(dir, "rules.yaml"), string(rules))
	promConfig := filepath.Join(dir, "prometheus.yml")
	writeFile(t, promConfig, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: slotcron
    static_configs:
      - targets: ['%s']
`, strings.Join(targets, "', '")))
	promAddr := startServer(t, "prometheus", func(port int) *exec.Cmd {
		return exec.Command(prometheus, "--config.file="+promConfig, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	}, "/-/ready")
	api := &promAPI{t: t, base: "http://" + promAddr}

	var fired promAlert
	poll.Until(t, 45*time.Second, "SlotcronJobFailing to fire for job_name=failing", func() error {
		alerts := api.alerts()
		for _, a := range alerts {
			if a.Labels["job_name"] == "healthy" {
				t.Fatalf("an alert names the healthy job: %+v", a)
			}
			if a.Labels["alertname"] == "SlotcronJobFailing" && a.State == "firing" {
				fired = a
			}
		}
		if fired.Labels == nil {
			return fmt.Errorf("alerts: %+v", alerts)
		}
		return nil
	})
	t.Logf("fired: %+v", fired.Labels)
	if fired.Labels["job_name"] != "failing" {
		t.Errorf("SlotcronJobFailing names job_name %q, want failing: %+v", fired.Labels["job_name"], fired.Labels)
	}
	for _, l := range []string{"job", "exported_job", "instance"} {
		if v, ok := fired.Labels[l]; ok {
			t.Errorf("SlotcronJobFailing has label %s=%q: the alert is per job_name, %+v", l, v, fired.Labels)
		}
	}
	if s := fired.Annotations["summary"]; !strings.Contains(s, "failing") {
		t.Errorf("summary %q does not name the job", s)
	}

	// As scraped, a per-job series keeps the scrape job in job and
	// slotcron's job in job_name.
	series := api.query(`slotcron_runs_total{job_name="failing",outcome="failed"}`)
	if len(series) != 2 {
		t.Errorf("failed runs of job_name=failing on %d replicas, want a series on each of 2: %+v", len(series), series)
	}
	for _, s := range series {
		if s.Metric["job"] != "slotcron" || s.Metric["exported_job"] != "" {
			t.Errorf("series %+v: want job=slotcron (the scrape job) and no exported_job", s.Metric)
		}
	}
	// Each replica says what it runs, and each job's schedule interval
	// (every second).
	if got := api.query(`slotcron_build_info`); len(got) != 2 {
		t.Errorf("build info of %d replicas, want 2: %+v", len(got), got)
	}
	for _, job := range []string{"failing", "healthy"} {
		got := api.query(fmt.Sprintf(`slotcron_schedule_interval_seconds{job_name=%q}`, job))
		if len(got) != 2 || got[0].value() != "1" || got[1].value() != "1" {
			t.Errorf("schedule interval of %s: %+v, want 1 s on each of 2 replicas", job, got)
		}
	}
	// The healthy job has succeeded by now, and still no alert names it.
	if got := api.query(`slotcron_runs_total{job_name="healthy",outcome="succeeded"} > 0`); len(got) == 0 {
		t.Error("no successful run of the healthy job scraped")
	}
	for _, a := range api.alerts() {
		if a.Labels["job_name"] == "healthy" {
			t.Errorf("an alert names the healthy job: %+v", a)
		}
	}

	// Every query of the dashboard parses and runs, its job variable at
	// "All".
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile("grafana/slotcron.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			api.query(strings.ReplaceAll(tg.Expr, "$job_name", ".*"))
		}
	}
}

// lookPath returns the path of binary, also looked for in /usr/bin. When
// it is missing the test is skipped, or fails when CI=true, so CI cannot
// pass by skipping what it was meant to run.
func lookPath(t *testing.T, binary, pkg string) string {
	t.Helper()
	if path, err := exec.LookPath(binary); err == nil {
		return path
	}
	if path := filepath.Join("/usr/bin", binary); isExecutable(path) {
		return path
	}
	msg := binary + " not found on PATH nor in /usr/bin (install the " + pkg + " package)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true, so the test fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServer starts the command newCmd makes for a free loopback port and
// waits until GET ready on it answers 200; it returns host:port. A server
// that exits first (its port taken meanwhile, say) is started again on
// another port, twice at most. The test's cleanup stops it: SIGTERM, then
// SIGKILL after 10 s. Its output is logged when the test fails.
func startServer(t *testing.T, name string, newCmd func(port int) *exec.Cmd, ready string) string {
	t.Helper()
	var out testlog.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, out.String())
		}
	})
	for try := 1; ; try++ {
		port := testserver.FreePort(t)
		cmd := newCmd(port)
		cmd.Stdout, cmd.Stderr = &out, &out
		testserver.OrphanProof(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { stop(cmd, exited) })
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		gone := false
		poll.Until(t, 30*time.Second, fmt.Sprintf("%s ready on %s, or gone", name, addr), func() error {
			select {
			case <-exited:
				gone = true
				return nil
			default:
			}
			return isReady(addr, ready)
		})
		if !gone {
			return addr
		}
		if try == 3 {
			t.Fatalf("%s on %s exited before it was ready", name, addr)
		}
		t.Logf("%s exited before it was ready on %s; again on another port", name, addr)
	}
}

// isReady returns nil if GET path on addr answers 200, or what it answered.
func isReady(addr, path string) error {
	client := &http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// stop ends a process this test started: SIGTERM, and SIGKILL if it has
// not exited 10 s later.
func stop(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// promAPI reads Prometheus's HTTP API; any error fails the test.
type promAPI struct {
	t    *testing.T
	base string
}

type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

func (s promSample) value() string {
	if len(s.Value) != 2 {
		return ""
	}
	v, _ := s.Value[1].(string)
	return v
}

// get decodes the data of a successful answer to GET path into data.
func (p *promAPI) get(path string, data any) {
	p.t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		p.t.Fatalf("GET %s: %s %s (%v)", path, resp.Status, body, err)
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		p.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func (p *promAPI) alerts() []promAlert {
	p.t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	p.get("/api/v1/alerts", &data)
	return data.Alerts
}

// query runs an instant query and returns its samples.
func (p *promAPI) query(q string) []promSample {
	p.t.Helper()
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	p.get("/api/v1/query?query="+url.QueryEscape(q), &data)
	if data.ResultType != "vector" {
		return nil
	}
	var out []promSample
	if err := json.Unmarshal(data.Result, &out); err != nil {
		p.t.Fatalf("query %s: %v", q, err)
	}
	return out
}
