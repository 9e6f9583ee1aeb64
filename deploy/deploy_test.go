// Package deploy holds deployment examples; its test keeps them honest: the
// Kubernetes manifests parse and their slotcron config validates against
// the reference binary's jobs.
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/slotcron/slotcron/cmd/scheduler/demo"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
)

func TestKubernetesConfigValidates(t *testing.T) {
	t.Setenv("POD_NAME", "slotcron-0")
	t.Setenv("REDIS_ADDR", "redis:6379")
	data, err := os.ReadFile("kubernetes/slotcron.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var config string
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if doc.Kind == "ConfigMap" {
			config = doc.Data["slotcron.yaml"]
		}
	}
	if config == "" {
		t.Fatal("no slotcron.yaml in the ConfigMap")
	}
	cfg, err := scheduler.Parse("kubernetes/slotcron.yaml#slotcron.yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	reg := jobs.NewRegistry()
	demo.Register(reg)
	if err := cfg.Validate(reg); err != nil {
		t.Fatal(err)
	}
}

func TestAlertsParse(t *testing.T) {
	data, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules.Groups) != 1 || len(rules.Groups[0].Rules) < 4 {
		t.Fatalf("rules %+v", rules)
	}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == "" || !bytes.Contains([]byte(r.Expr), []byte("slotcron_")) {
			t.Errorf("rule %+v", r)
		}
	}
}

// Every metric the dashboard and the alerts query is one slotcron exports.
func TestDashboardAndAlertsUseRealMetrics(t *testing.T) {
	known := map[string]bool{}
	for _, name := range []string{
		"claims_total", "runs_total", "run_duration_seconds", "dispatch_delay_seconds", "timer_lag_seconds",
		"lease_renewal_seconds", "leases_lost_total", "takeovers_total", "slots_missed_total",
		"next_run_timestamp_seconds", "last_success_timestamp_seconds", "store_up",
		"leader", "leadership_changes_total", "leader_renewal_seconds", "fence_rejections_total",
	} {
		known["slotcron_"+name] = true
	}
	metric := regexp.MustCompile(`slotcron_[a-z_]+`)
	for _, path := range []string{"grafana/slotcron.json", "prometheus/alerts.yaml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(path, ".json") && !json.Valid(data) {
			t.Fatalf("%s is not valid JSON", path)
		}
		for _, m := range metric.FindAllString(string(data), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
			if !known[base] {
				t.Errorf("%s queries %s, which slotcron does not export", path, m)
			}
		}
	}
}
