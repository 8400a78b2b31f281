package deploytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
)

// standIns is what `make images-offline` writes to .run/offline/images.env.
const standIns = `REDIS_IMAGE=likes-offline/redis:bookworm
HAPROXY_IMAGE=likes-offline/haproxy:bookworm
GO_IMAGE=likes-offline/golang:1.26.8
STATIC_IMAGE=likes-offline/static:nonroot
PROMETHEUS_IMAGE=likes-offline/prometheus:bookworm
`

// runOfflineEnv runs scripts/offline-env.sh (the .env step of `make images-offline`) on dir's
// images.env and .env, with the engine's open-file cap, and returns what it printed.
func runOfflineEnv(t *testing.T, dir, capArg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{filepath.Join(repoRoot, "scripts", "offline-env.sh")}
	if capArg != "" {
		args = append(args, "--nofile-cap", capArg)
	}
	args = append(args, filepath.Join(dir, "images.env"), filepath.Join(dir, ".env"))
	out, err := exec.CommandContext(ctx, "bash", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("offline-env.sh %v: %v\n%s", args[1:], err, out)
	}
	return string(out)
}

// dotenvSets returns the KEY=VALUE lines of a .env, in order, comments and blanks left out.
func dotenvSets(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// TestOfflineEnvMerge: the stand-ins and, where the engine grants fewer open files than
// docker-compose.yml's defaults, limits that fit are added to a user's .env; every line the user
// wrote stays first and unchanged, a variable the user set is never added again, and a second
// run changes nothing.
func TestOfflineEnvMerge(t *testing.T) {
	images := dotenvSets(standIns)
	tests := []struct {
		name string
		give string // the user's .env; "-": none
		cap  string // the engine's open-file cap per container
		want []string
	}{
		{
			name: "one image set by the user, engine capped at 20000",
			give: "# my registry's copy\nREDIS_IMAGE=\"registry.example.com/redis:7\"", // no final newline
			cap:  "20000",
			want: append(append([]string{`REDIS_IMAGE="registry.example.com/redis:7"`}, images[1:]...),
				"NOFILE=20000", "HAPROXY_NOFILE=20000", "HAPROXY_MAXCONN=9900"),
		},
		{
			name: "haproxy's file limit set by the user: maxconn fits under it",
			give: "export HAPROXY_NOFILE=12000\n",
			cap:  "20000",
			want: append(append([]string{"export HAPROXY_NOFILE=12000"}, images...), "NOFILE=20000", "HAPROXY_MAXCONN=5900"),
		},
		{
			name: "no .env, an engine with room for the defaults",
			give: "-",
			cap:  "1048576",
			want: images,
		},
		{
			name: "no limit",
			give: "LOG=1\n\n# blank line above\n",
			cap:  "unlimited",
			want: append([]string{"LOG=1"}, images...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "images.env"), []byte(standIns), 0o644); err != nil {
				t.Fatal(err)
			}
			dotenv := filepath.Join(dir, ".env")
			if tt.give != "-" {
				if err := os.WriteFile(dotenv, []byte(tt.give), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runOfflineEnv(t, dir, tt.cap)
			first, err := os.ReadFile(dotenv)
			if err != nil {
				t.Fatal(err)
			}
			if got := dotenvSets(string(first)); !slices.Equal(got, tt.want) {
				t.Errorf("merged .env sets\n  %v\nwant\n  %v\nfile:\n%s", got, tt.want, first)
			}
			if tt.give != "-" {
				kept := strings.TrimSuffix(tt.give, "\n")
				if !strings.HasPrefix(string(first), kept+"\n") {
					t.Errorf("the user's lines are not kept first and unchanged:\n%s", first)
				}
			}
			checkLimitsFit(t, string(first), tt.cap)
			runOfflineEnv(t, dir, tt.cap)
			if again, _ := os.ReadFile(dotenv); string(again) != string(first) {
				t.Errorf("a second run changed .env:\n%s\nto\n%s", first, again)
			}
		})
	}
}

// checkLimitsFit: whatever the merged .env sets, or leaves to the defaults, fits under the cap
// with HAPROXY_NOFILE >= 2 x HAPROXY_MAXCONN + 200 (docker-compose.yml's rule).
func checkLimitsFit(t *testing.T, text, capArg string) {
	t.Helper()
	limit, err := strconv.Atoi(capArg)
	if err != nil {
		return // unlimited
	}
	v := map[string]int{"NOFILE": 65536, "HAPROXY_NOFILE": 200200, "HAPROXY_MAXCONN": 100000}
	for _, line := range dotenvSets(text) {
		k, val, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if _, ok := v[k]; ok {
			if v[k], err = strconv.Atoi(val); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
		}
	}
	if v["NOFILE"] > limit || v["HAPROXY_NOFILE"] > limit || v["HAPROXY_NOFILE"] < 2*v["HAPROXY_MAXCONN"]+200 {
		t.Errorf("limits %v under a cap of %d: want each file limit within it and HAPROXY_NOFILE >= 2 x HAPROXY_MAXCONN + 200", v, limit)
	}
}

// TestOfflineEnvIsWhatComposeReads loads docker-compose.yml with a merged .env, as `docker
// compose` reads it with nothing else set: the user's image wins, the other stand-ins and the
// limits that fit apply.
func TestOfflineEnvIsWhatComposeReads(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "images.env"), []byte(standIns), 0o644); err != nil {
		t.Fatal(err)
	}
	dotenv := filepath.Join(dir, ".env")
	if err := os.WriteFile(dotenv, []byte("REDIS_IMAGE=registry.example.com/redis:7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOfflineEnv(t, dir, "20000")
	opts, err := cli.NewProjectOptions([]string{filepath.Join(repoRoot, "docker-compose.yml")},
		cli.WithWorkingDirectory(repoRoot), cli.WithEnv(nil), cli.WithEnvFiles(dotenv), cli.WithDotEnv,
		cli.WithProfiles([]string{"*"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml with %s: %v", dotenv, err)
	}
	for svc, want := range map[string]string{
		"redis-0": "registry.example.com/redis:7", "sentinel-0": "registry.example.com/redis:7",
		"haproxy":    "likes-offline/haproxy:bookworm",
		"prometheus": "likes-offline/prometheus:bookworm",
	} {
		if got := p.Services[svc].Image; got != want {
			t.Errorf("%s image %s; want %s", svc, got, want)
		}
	}
	if got := p.Services["fanout-svc"].Build.Args["GO_IMAGE"]; got == nil || *got != "likes-offline/golang:1.26.8" {
		t.Errorf("fanout-svc build arg GO_IMAGE %v; want the stand-in", got)
	}
	for svc, want := range map[string]int{"fanout-svc": 20000, "writer-svc": 20000, "haproxy": 20000} {
		if n := p.Services[svc].Ulimits["nofile"]; n == nil || n.Hard != want {
			t.Errorf("%s nofile %+v; want %d", svc, n, want)
		}
	}
	if got := p.Services["haproxy"].Environment["HAPROXY_MAXCONN"]; got == nil || *got != "9900" {
		t.Errorf("haproxy HAPROXY_MAXCONN %v; want 9900", got)
	}
}
