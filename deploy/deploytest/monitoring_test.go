package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promScrapeConfig is the part of deploy/monitoring/prometheus.yml the Compose stack relies on.
type promScrapeConfig struct {
	ScrapeConfigs []struct {
		JobName      string `json:"job_name"`
		DNSSDConfigs []struct {
			Names []string `json:"names"`
			Type  string   `json:"type"`
			Port  int      `json:"port"`
		} `json:"dns_sd_configs"`
	} `json:"scrape_configs"`
}

// TestComposePrometheus: the monitoring profile's Prometheus loads deploy/monitoring/prometheus.yml
// from the read-only mount of that directory (so the rule files beside it are the ones deploy/base
// ships), publishes its UI on loopback only, and finds every replica of writer-svc and
// fanout-svc on its listen port by a DNS A lookup of the service name, under a job of the same
// name (alerts.yml's LikesNodeDown reads `up` by those job names).
func TestComposePrometheus(t *testing.T) {
	p := loadCompose(t)
	s, ok := p.Services["prometheus"]
	if !ok {
		t.Fatal("docker-compose.yml has no prometheus service")
	}
	if !slices.Equal(s.Profiles, []string{"monitoring"}) {
		t.Errorf("prometheus profiles %v; want [monitoring], so that a plain `up` does not start it", s.Profiles)
	}
	if _, ok := loadComposeProfiles(t, nil).Services["prometheus"]; ok {
		t.Errorf("prometheus is enabled without the monitoring profile")
	}
	if !strings.HasPrefix(s.Image, "prom/prometheus:v3.") {
		t.Errorf("prometheus image %q by default; want a pinned prom/prometheus:v3.x tag", s.Image)
	}
	var mount string
	for _, v := range s.Volumes {
		if v.Source == filepath.Join(repoRoot, "deploy", "monitoring") && v.ReadOnly {
			mount = v.Target
		}
	}
	if mount == "" {
		t.Fatalf("prometheus volumes %v; want deploy/monitoring mounted read-only", s.Volumes)
	}
	if want := "--config.file=" + mount + "/prometheus.yml"; !slices.Contains(s.Command, want) {
		t.Errorf("prometheus command %v; want %s", s.Command, want)
	}
	if len(s.Ports) != 1 || s.Ports[0].HostIP != "127.0.0.1" || s.Ports[0].Published != "9090" || s.Ports[0].Target != 9090 {
		t.Errorf("prometheus ports %+v; want 127.0.0.1:9090:9090 by default", s.Ports)
	}
	if got := loadCompose(t, "PROMETHEUS_PORT=19090").Services["prometheus"].Ports; len(got) != 1 || got[0].Published != "19090" {
		t.Errorf("PROMETHEUS_PORT=19090: ports %+v; want published on 19090", got)
	}

	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "monitoring", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg promScrapeConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	for _, svc := range likesServices(t, p) {
		if oneShot(svc) {
			continue
		}
		port, _ := strconv.Atoi(listenPort(t, svc))
		var found bool
		for _, sc := range cfg.ScrapeConfigs {
			for _, d := range sc.DNSSDConfigs {
				found = found || (sc.JobName == svc.Name && d.Type == "A" && d.Port == port && slices.Equal(d.Names, []string{svc.Name}))
			}
		}
		if !found {
			t.Errorf("prometheus.yml has no job %s with dns_sd_configs {names: [%s], type: A, port: %d}", svc.Name, svc.Name, port)
		}
	}
}
