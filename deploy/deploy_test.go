// Package deploy holds deployment examples; its tests keep them honest: the
// Kubernetes manifests decode strictly into the Kubernetes API types, carry
// the hardening they claim, and their slotcron config validates against the
// reference binary's jobs; the systemd unit scores what its comment says.
package deploy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/slotcron/slotcron/cmd/scheduler/demo"
	"github.com/slotcron/slotcron/jobs"
	"github.com/slotcron/slotcron/scheduler"
	_ "github.com/slotcron/slotcron/scheduler/etcd" // the manifests use every store kind
	_ "github.com/slotcron/slotcron/scheduler/postgres"
	_ "github.com/slotcron/slotcron/scheduler/redis"
	"github.com/slotcron/slotcron/slotstore/etcdstore"
)

// manifests are the Kubernetes examples: replicas on Redis, and on an etcd
// cluster reached with TLS. Every test of a manifest runs on each.
var manifests = []string{"kubernetes/slotcron.yaml", "kubernetes/slotcron-etcd.yaml"}

// eachManifest runs test once per manifest, as a subtest named by it.
func eachManifest(t *testing.T, test func(t *testing.T, manifest string)) {
	for _, m := range manifests {
		t.Run(filepath.Base(m), func(t *testing.T) { test(t, m) })
	}
}

// podMonitor is prometheus-operator's monitoring.coreos.com/v1 PodMonitor,
// as far as the manifest uses it. The operator's Go types are a module of
// their own; decoded strictly, a field this does not know fails the test as
// a misspelt one would.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port,omitempty"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// objects is the manifest, decoded.
type objects struct {
	serviceAccount *corev1.ServiceAccount
	configMap      *corev1.ConfigMap
	deployment     *appsv1.Deployment
	pdb            *policyv1.PodDisruptionBudget
	service        *corev1.Service
	podMonitor     *podMonitor
	networkPolicy  *networkingv1.NetworkPolicy
}

// documents splits a multi-document YAML file as kubectl does.
func documents(t *testing.T, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// decode reads every document of data strictly into its API type: an
// unknown or misspelt field, or a kind this does not expect, is an error.
func decode(t *testing.T, data []byte) (objects, error) {
	t.Helper()
	var o objects
	for i, doc := range documents(t, data) {
		var tm metav1.TypeMeta
		if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
			return o, fmt.Errorf("document %d: %w", i+1, err)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ServiceAccount":
			o.serviceAccount = &corev1.ServiceAccount{}
			into = o.serviceAccount
		case "v1 ConfigMap":
			o.configMap = &corev1.ConfigMap{}
			into = o.configMap
		case "apps/v1 Deployment":
			o.deployment = &appsv1.Deployment{}
			into = o.deployment
		case "policy/v1 PodDisruptionBudget":
			o.pdb = &policyv1.PodDisruptionBudget{}
			into = o.pdb
		case "v1 Service":
			o.service = &corev1.Service{}
			into = o.service
		case "monitoring.coreos.com/v1 PodMonitor":
			o.podMonitor = &podMonitor{}
			into = o.podMonitor
		case "networking.k8s.io/v1 NetworkPolicy":
			o.networkPolicy = &networkingv1.NetworkPolicy{}
			into = o.networkPolicy
		default:
			return o, fmt.Errorf("document %d: unexpected %s %s", i+1, tm.APIVersion, tm.Kind)
		}
		// As the API server reads it: field names match case and all.
		js, err := sigsyaml.YAMLToJSONStrict(doc)
		if err != nil {
			return o, fmt.Errorf("document %d (%s): %w", i+1, tm.Kind, err)
		}
		strict, err := sigsjson.UnmarshalStrict(js, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		if err := errors.Join(append(strict, err)...); err != nil {
			return o, fmt.Errorf("document %d (%s): %w", i+1, tm.Kind, err)
		}
	}
	return o, nil
}

func readManifest(t *testing.T, manifest string) ([]byte, objects) {
	t.Helper()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	o, err := decode(t, data)
	if err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
	for name, missing := range map[string]bool{
		"ServiceAccount": o.serviceAccount == nil, "ConfigMap": o.configMap == nil, "Deployment": o.deployment == nil,
		"PodDisruptionBudget": o.pdb == nil, "Service": o.service == nil, "PodMonitor": o.podMonitor == nil,
		"NetworkPolicy": o.networkPolicy == nil,
	} {
		if missing {
			t.Errorf("%s has no %s", manifest, name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return data, o
}

// The manifest decodes strictly, and strictly means it: the same manifest
// with a field misspelt, or a field the type lacks, does not.
func TestKubernetesManifestDecodesStrictly(t *testing.T) {
	eachManifest(t, func(t *testing.T, manifest string) {
		data, _ := readManifest(t, manifest)
		for _, c := range []struct{ from, to string }{
			{"readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true"},
			{"maxUnavailable: 1", "maxUnavailabe: 1"},
			{"automountServiceAccountToken: false\n---", "automountServiceAccountToken: false\nautomount: true\n---"},
			{"interval: 30s", "intervall: 30s"},
			{"policyTypes: [Ingress]", "policyType: [Ingress]"},
		} {
			if !bytes.Contains(data, []byte(c.from)) {
				t.Fatalf("%s no longer holds %q", manifest, c.from)
			}
			if _, err := decode(t, bytes.Replace(data, []byte(c.from), []byte(c.to), 1)); err == nil {
				t.Errorf("%q for %q decoded without an error", c.to, c.from)
			}
		}
	})
}

// Every container runs as a non-root user, on a read-only root file system,
// without privilege escalation or capabilities, under the runtime's seccomp
// profile, with resources, probes and an image of a fixed release.
func TestKubernetesHardening(t *testing.T) {
	eachManifest(t, func(t *testing.T, manifest string) {
		_, o := readManifest(t, manifest)
		pod := o.deployment.Spec.Template.Spec
		psc := pod.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a service account token")
		}
		containers := append(slices.Clone(pod.InitContainers), pod.Containers...)
		if len(containers) == 0 {
			t.Fatal("no containers")
		}
		for _, c := range containers {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("container %s: no securityContext", c.Name)
				continue
			}
			if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
				t.Errorf("container %s: runAsNonRoot is not true", c.Name)
			}
			if !isTrue(sc.ReadOnlyRootFilesystem) {
				t.Errorf("container %s: readOnlyRootFilesystem is not true", c.Name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				t.Errorf("container %s: capabilities do not drop ALL, or add some", c.Name)
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil {
				seccomp = psc.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("container %s: seccompProfile is not RuntimeDefault", c.Name)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
					t.Errorf("container %s: no %s request", c.Name, r)
				}
			}
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
				t.Errorf("container %s: no memory limit", c.Name)
			}
			if !pinned(c.Image) {
				t.Errorf("container %s: image %q is not pinned to a release", c.Name, c.Image)
			}
		}
		app := pod.Containers[0]
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"liveness", app.LivenessProbe, "/healthz"}, {"readiness", app.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path {
				t.Errorf("container %s: no %s probe on %s", app.Name, p.name, p.path)
			}
		}
	})
}

func isTrue(b *bool) bool { return b != nil && *b }

// pinned reports whether image names a digest, or a tag other than latest.
func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return false
	}
	return image[i+1:] != "" && image[i+1:] != "latest"
}

// What selects the replicas' pods selects them all: the PodDisruptionBudget,
// the Service, the PodMonitor, the NetworkPolicy and the spread constraints.
func TestKubernetesSelectorsMatchThePods(t *testing.T) {
	eachManifest(t, func(t *testing.T, manifest string) {
		_, o := readManifest(t, manifest)
		pods := labels.Set(o.deployment.Spec.Template.Labels)
		matches := func(what string, sel *metav1.LabelSelector) {
			t.Helper()
			if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
				t.Errorf("%s: no selector (it would select every pod)", what)
				return
			}
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			if !s.Matches(pods) {
				t.Errorf("%s selects %s, not the Deployment's pods %v", what, s, pods)
			}
		}
		matches("Deployment", o.deployment.Spec.Selector)
		matches("PodDisruptionBudget", o.pdb.Spec.Selector)
		matches("Service", &metav1.LabelSelector{MatchLabels: o.service.Spec.Selector})
		matches("PodMonitor", &o.podMonitor.Spec.Selector)
		matches("NetworkPolicy", &o.networkPolicy.Spec.PodSelector)

		if o.pdb.Spec.MaxUnavailable == nil && o.pdb.Spec.MinAvailable == nil {
			t.Error("the PodDisruptionBudget bounds nothing")
		}
		spread := false
		for _, c := range o.deployment.Spec.Template.Spec.TopologySpreadConstraints {
			matches("topology spread over "+c.TopologyKey, c.LabelSelector)
			spread = spread || c.TopologyKey == "kubernetes.io/hostname" && c.MaxSkew == 1
		}
		if !spread {
			t.Error("no topology spread across nodes (kubernetes.io/hostname, maxSkew 1)")
		}
		port := o.deployment.Spec.Template.Spec.Containers[0].Ports[0]
		if ep := o.podMonitor.Spec.PodMetricsEndpoints; len(ep) != 1 || ep[0].Port != port.Name || ep[0].Path != "/metrics" {
			t.Errorf("PodMonitor endpoints %+v, want port %s path /metrics", ep, port.Name)
		}
		if ps := o.service.Spec.Ports; len(ps) != 1 || ps[0].TargetPort.String() != port.Name {
			t.Errorf("Service ports %+v, want target port %s", ps, port.Name)
		}
		np := o.networkPolicy.Spec
		if !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) || len(np.Ingress) == 0 {
			t.Fatalf("NetworkPolicy %+v limits no ingress", np)
		}
		for _, rule := range np.Ingress {
			if len(rule.From) == 0 || len(rule.Ports) == 0 {
				t.Errorf("NetworkPolicy rule %+v lets every pod in, or to every port", rule)
			}
			for _, p := range rule.Ports {
				if p.Port == nil || p.Port.IntValue() != int(port.ContainerPort) {
					t.Errorf("NetworkPolicy opens port %v, not %d", p.Port, port.ContainerPort)
				}
			}
		}
	})
}

// The pod template's config checksum is the SHA-256 of the ConfigMap's
// slotcron.yaml, so that editing the config rolls the pods.
func TestKubernetesConfigChecksum(t *testing.T) {
	eachManifest(t, func(t *testing.T, manifest string) {
		_, o := readManifest(t, manifest)
		config := o.configMap.Data["slotcron.yaml"]
		sum := sha256.Sum256([]byte(config))
		want := hex.EncodeToString(sum[:])
		if got := o.deployment.Spec.Template.Annotations["checksum/config"]; got != want {
			t.Errorf("checksum/config is %q; the ConfigMap's slotcron.yaml has %s: put that in %s", got, want, manifest)
		}
		if !strings.Contains(config, "token: ${ADMIN_TOKEN}") {
			t.Error("the config's http.token is not ${ADMIN_TOKEN}")
		}
		for _, e := range o.deployment.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "ADMIN_TOKEN" {
				if ref := e.ValueFrom; ref == nil || ref.SecretKeyRef == nil || isTrue(ref.SecretKeyRef.Optional) {
					t.Errorf("ADMIN_TOKEN comes from %+v, not a required Secret", e)
				}
				return
			}
		}
		t.Error("the container has no ADMIN_TOKEN")
	})
}

// The ConfigMap's slotcron config validates against the reference binary's
// jobs, with the environment the Deployment gives it.
func TestKubernetesConfigValidates(t *testing.T) {
	eachManifest(t, func(t *testing.T, manifest string) {
		_, o := readManifest(t, manifest)
		t.Setenv("POD_NAME", "slotcron-0")
		t.Setenv("REDIS_ADDR", "redis:6379") // the Redis manifest's
		t.Setenv("ADMIN_TOKEN", "secret")
		config := o.configMap.Data["slotcron.yaml"]
		if config == "" {
			t.Fatal("no slotcron.yaml in the ConfigMap")
		}
		cfg, err := scheduler.Parse(manifest+"#slotcron.yaml", []byte(config))
		if err != nil {
			t.Fatal(err)
		}
		reg := jobs.NewRegistry()
		demo.Register(reg)
		if err := cfg.Validate(reg); err != nil {
			t.Fatal(err)
		}
		if w := cfg.Warnings(); len(w) > 0 {
			t.Errorf("warnings: %v", w)
		}
	})
}

// exposure is systemd-analyze's overall figure for a unit.
var exposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// systemd-analyze rates the unit's sandbox at 2.0 or better ("OK"), the
// figure its comment states, and finds nothing in it that it does not know.
func TestSystemdUnitSecurity(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze")
	}
	const unit = "systemd/slotcron@.service"
	out, err := exec.Command(analyze, "security", "--offline=yes", unit).CombinedOutput()
	m := exposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exposure %.1f", score)
	if score > 2.0 {
		t.Errorf("exposure %.1f, want 2.0 or less:\n%s", score, out)
	}
	text, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte(fmt.Sprintf("scores this unit %.1f", score))) {
		t.Errorf("%s does not state the exposure systemd-analyze gives it, %.1f", unit, score)
	}

	// verify reads every directive; the binary need not be installed here.
	dir := t.TempDir()
	copyUnit := filepath.Join(dir, "slotcron@.service")
	checked := regexp.MustCompile(`(?m)^ExecStart=.*$`).ReplaceAll(text, []byte("ExecStart=/bin/true"))
	if err := os.WriteFile(copyUnit, checked, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(analyze, "verify", "--man=no", copyUnit).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("slotcron@")) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The instances of the unit share one fixed user, which the sysusers file
// creates, so they can share the SQLite file in their state directory.
func TestSystemdInstancesShareAUser(t *testing.T) {
	unit, err := os.ReadFile("systemd/slotcron@.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = v
		}
	}
	if v, set := settings["DynamicUser"]; set && v != "no" {
		t.Errorf("DynamicUser=%s gives each instance its own user", v)
	}
	user := settings["User"]
	if user == "" || strings.Contains(user, "%") || settings["StateDirectory"] == "" || strings.Contains(settings["StateDirectory"], "%i") {
		t.Errorf("User=%q StateDirectory=%q: want one fixed user and one state directory for every instance", user, settings["StateDirectory"])
	}
	sysusers, err := os.ReadFile("systemd/slotcron.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^u ` + regexp.QuoteMeta(user) + ` `).Match(sysusers) {
		t.Errorf("systemd/slotcron.sysusers does not create user %q:\n%s", user, sysusers)
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
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
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
		if (r.Alert == "") == (r.Record == "") || !bytes.Contains([]byte(r.Expr), []byte("slotcron_")) {
			t.Errorf("rule %+v", r)
		}
	}
}

// Every metric the dashboard and the alerts query is one slotcron exports.
func TestDashboardAndAlertsUseRealMetrics(t *testing.T) {
	known := map[string]bool{}
	for _, name := range []string{
		"claims_total", "runs_total", "run_duration_seconds", "dispatch_delay_seconds", "timer_lag_seconds",
		"lease_renewal_seconds", "leases_lost_total", "takeovers_total", "slots_missed_total", "jobs_auto_paused_total",
		"next_run_timestamp_seconds", "last_success_timestamp_seconds", "store_up",
		"leader", "leadership_changes_total", "leader_renewal_seconds", "fence_rejections_total",
		"fence_repeats_total", "schedule_interval_seconds", "build_info", "cluster_paused", "job_paused", "job_paused_by_slotcron",
		"job_spec_conflict", "slots_unaccounted", "config_last_reload_successful", "config_last_reload_success_timestamp_seconds",
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

// The etcd manifest's config reaches etcd with TLS, and every file its tls
// block names lies in a Secret volume the app container mounts, readable by
// the pod's group and by no one else.
func TestKubernetesEtcdClientCertificateMounted(t *testing.T) {
	const manifest = "kubernetes/slotcron-etcd.yaml"
	_, o := readManifest(t, manifest)
	t.Setenv("POD_NAME", "slotcron-0")
	t.Setenv("ADMIN_TOKEN", "secret")
	cfg, err := scheduler.Parse(manifest+"#slotcron.yaml", []byte(o.configMap.Data["slotcron.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := cfg.Store.Options.(etcdstore.Options)
	if cfg.Store.Kind != "etcd" || len(e.Endpoints) < 3 {
		t.Fatalf("store %s with endpoints %v, want etcd and every member of a 3-member cluster", cfg.Store.Kind, e.Endpoints)
	}
	for _, ep := range e.Endpoints {
		if !strings.HasPrefix(ep, "https://") {
			t.Errorf("endpoint %s is not https", ep)
		}
	}
	pod := o.deployment.Spec.Template.Spec
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for key, file := range map[string]string{"ca_file": e.TLS.CAFile, "cert_file": e.TLS.CertFile, "key_file": e.TLS.KeyFile} {
		if file == "" {
			t.Errorf("tls.%s is not set", key)
			continue
		}
		var found bool
		for _, m := range pod.Containers[0].VolumeMounts {
			if filepath.Dir(file) != m.MountPath {
				continue
			}
			found = true
			sec := volumes[m.Name].Secret
			if sec == nil {
				t.Errorf("tls.%s %s: volume %s is no Secret", key, file, m.Name)
				continue
			}
			if sec.DefaultMode == nil || *sec.DefaultMode&0o007 != 0 || *sec.DefaultMode&0o040 == 0 {
				t.Errorf("tls.%s %s: mode %v, want readable by the group and not by others", key, file, sec.DefaultMode)
			}
		}
		if !found {
			t.Errorf("tls.%s %s is in no mounted volume", key, file)
		}
	}
	if sc := pod.SecurityContext; sc == nil || sc.FSGroup == nil || sc.RunAsGroup == nil || *sc.FSGroup != *sc.RunAsGroup {
		t.Error("the pod's fsGroup is not its group: the process could not read the certificate")
	}
}
