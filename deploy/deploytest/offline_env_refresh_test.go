package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOfflineEnvRefreshesItsOwnLines: after a Go or Debian upgrade, `make images-offline` (its
// .env step, scripts/offline-env.sh; no image is built here) replaces the stand-in tags an
// earlier run wrote, in the marked block or in the unmarked one of earlier versions, while the
// user's own lines, before or after that block, stay as they are and keep winning.
func TestOfflineEnvRefreshesItsOwnLines(t *testing.T) {
	const legacy = "# Added by `make images-offline` (scripts/offline-env.sh): local stand-ins for the base\n" +
		"# images, and open-file limits within the 20000 this engine grants a container.\n" +
		"# Edit or delete freely: a later run only adds variables that are not set here.\n" +
		"REDIS_IMAGE=likes-offline/redis:bullseye\n" +
		"GO_IMAGE=likes-offline/golang:1.25.0\n" +
		"NOFILE=20000\n"
	tests := []struct {
		name string
		give string // the user's .env, with an earlier run's lines
	}{
		{"unmarked block of an earlier version, user lines around it",
			"# mine\nHAPROXY_IMAGE=registry.example.com/haproxy:3\n" + legacy + "\nLOG_LEVEL=debug\n"},
		{"marked block, user line after it",
			"HAPROXY_IMAGE=registry.example.com/haproxy:3\n" +
				"# >>> make images-offline (scripts/offline-env.sh) rewrites the lines from here to the end mark\n" +
				"GO_IMAGE=likes-offline/golang:1.25.0\nREDIS_IMAGE=likes-offline/redis:bullseye\nNOFILE=20000\n" +
				"# <<< make images-offline\nLOG_LEVEL=debug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "images.env"), []byte(standIns), 0o644); err != nil {
				t.Fatal(err)
			}
			dotenv := filepath.Join(dir, ".env")
			if err := os.WriteFile(dotenv, []byte(tt.give), 0o644); err != nil {
				t.Fatal(err)
			}
			runOfflineEnv(t, dir, "30000")
			first, err := os.ReadFile(dotenv)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"HAPROXY_IMAGE=registry.example.com/haproxy:3", "LOG_LEVEL=debug",
				"REDIS_IMAGE=likes-offline/redis:bookworm", "GO_IMAGE=likes-offline/golang:1.26.8",
				"STATIC_IMAGE=likes-offline/static:nonroot", "PROMETHEUS_IMAGE=likes-offline/prometheus:bookworm",
				"NOFILE=30000", "HAPROXY_NOFILE=30000", "HAPROXY_MAXCONN=14900"}
			if got := dotenvSets(string(first)); !slices.Equal(got, want) {
				t.Errorf("refreshed .env sets\n  %v\nwant\n  %v\nfile:\n%s", got, want, first)
			}
			if strings.Contains(string(first), "bullseye") || strings.Contains(string(first), "1.25.0") {
				t.Errorf("a stale stand-in tag survived:\n%s", first)
			}
			if !strings.HasPrefix(string(first), "# mine\n") && strings.HasPrefix(tt.give, "# mine\n") {
				t.Errorf("the user's comment is not kept first:\n%s", first)
			}
			runOfflineEnv(t, dir, "30000")
			if again, _ := os.ReadFile(dotenv); string(again) != string(first) {
				t.Errorf("a second run changed .env:\n%s\nto\n%s", first, again)
			}

			// The user takes GO_IMAGE over: the next run drops it from the block.
			if err := os.WriteFile(dotenv, []byte("GO_IMAGE=golang:1.26\n"+string(first)), 0o644); err != nil {
				t.Fatal(err)
			}
			runOfflineEnv(t, dir, "30000")
			mine, _ := os.ReadFile(dotenv)
			if n := strings.Count(string(mine), "GO_IMAGE="); n != 1 || !strings.HasPrefix(string(mine), "GO_IMAGE=golang:1.26\n") {
				t.Errorf("the user's GO_IMAGE is not the only one:\n%s", mine)
			}
		})
	}
}
