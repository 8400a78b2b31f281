package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/logging"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/testkit/redistest"
)

// BenchmarkLikeRequests measures the writer's own CPU per like request: the writer runs in this
// process, built as run builds it (config, logger, app, server with its timeouts), and wrk in a
// child process sends it likes of new users on one post over 64 keep-alive connections
// (scripts/wrk-likes.lua), so that this process's CPU, and its -cpuprofile, are the writer's
// alone. It uses nothing newer than the first writer, so the same file profiles older versions.
//
//	taskset -c 1 redis-server --port 6400 --save '' --appendonly no &
//	LIKES_BENCH_REDIS=127.0.0.1:6400 taskset -c 0 go test -run '^$' -bench LikeRequests \
//	  -cpuprofile cpu.out ./writer-svc/ && go tool pprof -top -cum writer-svc.test cpu.out
//
// LIKES_BENCH_DURATION (default 10s) is how long each wrk run lasts; one run is one op.
func BenchmarkLikeRequests(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk not found: apt-get install -y wrk")
	}
	duration := os.Getenv("LIKES_BENCH_DURATION")
	if duration == "" {
		duration = "10s"
	}
	addr := os.Getenv("LIKES_BENCH_REDIS")
	if addr == "" {
		addr = redistest.Start(b).Addr
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	url := benchWriter(b, addr)
	var requests int
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := processCPU(b)
		out, err := exec.Command(wrk, "-t2", "-c64", "-d"+duration, "-s", "../scripts/wrk-likes.lua", url,
			"--", "hot", "r"+strconv.Itoa(i)).CombinedOutput()
		if err != nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		cpu += processCPU(b) - before
		requests += wrkAcknowledged(b, string(out))
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(requests), "writer-µs/like")
	b.ReportMetric(float64(requests)/float64(b.N), "likes/op")
}

// benchWriter serves a writer on Redis at addr and returns its URL.
func benchWriter(b *testing.B, addr string) string {
	b.Helper()
	args := []string{"writer-svc", "--redis-url", "redis://" + addr + "/0", "--listen", "127.0.0.1:0"}
	// wrk names users in X-User-ID. Set by environment, not flag, so that a writer older than
	// TRUST_USER_HEADER (which trusted the header anyway) still parses these arguments.
	cfg, err := loadConfig(args, func(k string) string {
		if k == "TRUST_USER_HEADER" {
			return "true"
		}
		return ""
	}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	log, err := logging.New("writer-svc", "info", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	a, err := newApp(context.Background(), cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := serve.NewServer(cfg.Serve, a.handler, log)
	go func() { _ = srv.Serve(ln) }() // exits when Close closes the listener
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// processCPU returns the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wrkAcknowledged returns the requests wrk completed minus its non-2xx answers.
func wrkAcknowledged(b *testing.B, out string) int {
	b.Helper()
	n, bad := -1, 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[1] == "requests" && f[2] == "in":
			n, _ = strconv.Atoi(f[0])
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx"):
			bad, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	if n < 0 {
		b.Fatalf("wrk output without a request count:\n%s", out)
	}
	return n - bad
}
