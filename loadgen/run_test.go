package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/loadgen/internal/ramp"
)

func TestExpandSources(t *testing.T) {
	tests := []struct {
		give    []string
		want    []string
		wantErr bool
	}{
		{give: []string{"127.0.0.2-127.0.0.4"}, want: []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}},
		{give: []string{"127.0.0.9", "127.0.1.255-127.0.2.0"}, want: []string{"127.0.0.9", "127.0.1.255", "127.0.2.0"}},
		{give: []string{"127.0.0.4-127.0.0.2"}, wantErr: true},
		{give: []string{"localhost"}, wantErr: true},
		{give: []string{"10.0.0.0-10.255.255.255"}, wantErr: true}, // too many
	}
	for _, tt := range tests {
		got, err := expandSources(tt.give)
		if (err != nil) != tt.wantErr {
			t.Errorf("expandSources(%v) err = %v; want error %v", tt.give, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !slices.Equal(got, tt.want) {
			t.Errorf("expandSources(%v) = %v; want %v", tt.give, got, tt.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	env := map[string]string{"LOADGEN_CONNS": "10,20", "LOADGEN_RATE": "5", "LOADGEN_IDENTITY": "header"}
	getenv := func(k string) string { return env[k] }
	var stderr bytes.Buffer
	cfg, out, err := loadConfig(context.Background(), []string{"loadgen", "ramp", "--posts", "3", "--json",
		"--fanout", "http://127.0.0.1:1,http://127.0.0.1:2", "--writer", "http://127.0.0.1:3/"}, getenv, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Conns, []int{10, 20}) || cfg.Rate != 5 || cfg.Posts != 3 || !out.json ||
		len(cfg.Nodes) != 2 || cfg.Writer != "http://127.0.0.1:3" || cfg.WorkerArgs[0] != "worker" || cfg.Identity != ramp.IdentityHeader {
		t.Fatalf("config %+v, outputs %+v: flags and environment not applied", cfg, out)
	}
	// Sessions are the default, and need the deployment's Redis, where the key is.
	cfg, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--redis", "127.0.0.1:4"}, func(string) string { return "" }, &stderr)
	if err != nil || cfg.Identity != ramp.IdentitySession || cfg.SessionKeyRotate != 7*24*time.Hour {
		t.Fatalf("defaults with --redis: identity %q, key rotation %v, %v; want session, 168h", cfg.Identity, cfg.SessionKeyRotate, err)
	}
	_, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--identity", "session"}, getenv, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--redis") || !strings.Contains(err.Error(), "--identity header") {
		t.Errorf("sessions without Redis: %v; want an error naming --redis and --identity header", err)
	}
	// Benchmark sessions need their key file, and no Redis: the key is not kept there.
	keyFile := filepath.Join(t.TempDir(), "bench-session.key")
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	benchEnv := map[string]string{"LOADGEN_IDENTITY": "bench", "LOADGEN_BENCH_KEY_FILE": keyFile}
	cfg, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp"}, func(k string) string { return benchEnv[k] }, &stderr)
	if err != nil || cfg.Identity != ramp.IdentityBench || cfg.BenchKeyFile != keyFile {
		t.Fatalf("LOADGEN_IDENTITY=bench without Redis: identity %q, key file %q, %v; want bench, %s", cfg.Identity, cfg.BenchKeyFile, err, keyFile)
	}
	_, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--identity", "bench"}, getenv, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--bench-key-file") {
		t.Errorf("--identity bench without a key file: %v; want an error naming --bench-key-file", err)
	}
	// A reactions ramp: the room reacts at its ceiling unless --rate says otherwise.
	cfg, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--react", "--react-kinds", "clap,wow",
		"--react-interval", "2s", "--audience", "300", "--rate", "0"}, getenv, &stderr)
	if err != nil || cfg.React == nil || !slices.Equal(cfg.React.Kinds, []string{"clap", "wow"}) || cfg.React.Interval != 2*time.Second ||
		cfg.React.Audience != 300 || !strings.Contains(cfg.Mode(), "ceiling") || cfg.LatencySample != 50 {
		t.Fatalf("--react: %+v, mode %q, %v; want kinds clap,wow every 2s by 300 people at the ceiling", cfg.React, cfg.Mode(), err)
	}
	// A node's loss: the command runs --kill-after into the window.
	cfg, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--kill-cmd", "kill -9 1", "--kill-after", "2s"}, getenv, &stderr)
	if err != nil || cfg.Storm == nil || cfg.Storm.Command != "kill -9 1" || cfg.Storm.After != 2*time.Second {
		t.Fatalf("--kill-cmd: %+v, %v; want kill -9 1 after 2s", cfg.Storm, err)
	}
	if cfg, _, err = loadConfig(context.Background(), []string{"loadgen", "ramp", "--one-like"}, getenv, &stderr); err != nil || !cfg.OneLike {
		t.Fatalf("--one-like: %v, %v; want it set", cfg.OneLike, err)
	}
	for _, bad := range [][]string{
		{"--kill-cmd", "true", "--kill-after", "30s"}, // the window is 30 s
		{"--kill-cmd", "true", "--kill-after", "-1s"},
		{"--react", "--feed", "2"},
		{"--one-like", "--react"},
		{"--one-like", "--conns", "0"}, // no viewer to reach
		{"--react", "--react-kinds", ""},
		{"--react", "--react-interval", "0s"},
		{"--react", "--audience", "-1"},
		{"--latency-sample", "-1"},
		{"--conns", "20,10"},
		{"--conns", "ten"},
		{"--conns", "0", "--until-break", "--rate", "10"}, // viewers grown from none stay none
		{"--conns", "-1"},
		{"--posts", "0"},
		{"--fanout", "127.0.0.1:8090"},
		{"--window", "0s"},
		{"--sources", "nope"},
		{"--redis", "127.0.0.1:1", "--redis-sentinels", "127.0.0.1:2"},
		{"--redis-sentinels", "127.0.0.1:2", "--redis-sentinel-master", ""},
		{"--identity", "cookie"},
		{"--identity", "session", "--redis", "127.0.0.1:1", "--session-key-rotate", "1500ms"},
	} {
		if _, _, err := loadConfig(context.Background(), append([]string{"loadgen", "ramp"}, bad...), getenv, &stderr); err == nil {
			t.Errorf("flags %v: err = nil; want an error", bad)
		}
	}
}

func TestRunCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"loadgen", "help"}, func(string) string { return "" }, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "loadgen ramp") || !strings.Contains(stdout.String(), "--identity bench") {
		t.Fatalf("help printed %q; want the commands and the identity a locked-down deployment uses", stdout.String())
	}
	if err := run(context.Background(), []string{"loadgen", "bogus"}, func(string) string { return "" }, nil, &stdout, &stderr); err == nil {
		t.Fatal("unknown command: err = nil; want an error")
	}
	if err := run(context.Background(), []string{"loadgen", "ramp", "--help"}, func(string) string { return "" }, nil, &stdout, &stderr); err != nil {
		t.Fatalf("ramp --help: %v; want nil", err)
	}
	if !strings.Contains(stderr.String(), "-max-connect-rate") {
		t.Fatal("ramp --help did not list the flags")
	}
}
