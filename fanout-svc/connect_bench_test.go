package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/connecttest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// The package's TestMain is the leak check's; the connect benchmark's child is caught here,
// before it.
func init() { connecttest.Main() }

// connectRequest is what a browser's EventSource sends, less the headers no server reads.
const connectRequest = "GET /sse/bench HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"

// BenchmarkConnect measures a viewer connect on the whole node: run with its defaults (watching
// on, heartbeats, the request metrics, the send buffer) on a real redis-server, the client ends
// in a child process. Each connect is a stream of one post that the node is subscribed to and
// knows, beside viewers streams held open; cpu-µs/connect is this process's CPU per connect
// (accept, HTTP, admission, hijack, registration, the first frame), to be read beside the hub's
// BenchmarkBareConnect, the same connects on a bare accept-read-write loop. The connects take the
// node's fast path (fastpath.go), as a browser's EventSource does.
//
// Run, each test binary alone, one round of connects per run:
//
//	go test -c -o fanout.test ./fanout-svc/ && go test -c -o hub.test ./fanout-svc/internal/hub/
//	./hub.test -test.run '^$' -test.bench 'BareConnect/viewers=1000$' -test.benchtime 5000x -test.count 3
//	./fanout.test -test.run '^$' -test.bench 'Connect/viewers=1000$' -test.benchtime 5000x -test.count 3
//	WATCHING_INTERVAL=0 ./fanout.test -test.run '^$' -test.bench 'Connect/viewers=1000$' -test.benchtime 5000x -test.count 3
//	LIKES_CONNECTTEST_PROFILE=dir ./fanout.test -test.run '^$' -test.bench 'Connect/viewers=1000$' -test.benchtime 5000x
func BenchmarkConnect(b *testing.B) {
	rs := redistest.Start(b)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			base := startBenchNode(b, rs.URL)
			d := connecttest.Start(b, base[len("http://"):], connectRequest, 8)
			connecttest.Bench(b, d, n, func(int) {
				poll.Until(b, 60*time.Second, "the node to let the closed streams go", func() bool {
					v, err := clienttest.ScrapeMetric(base, "likes_fanout_viewers")
					return err == nil && int(v) == d.Streams()
				})
			})
		})
	}
}

// benchNodeEnv is the configuration a benchmark run may change from the environment; the node
// runs with its defaults otherwise, but for MAX_VIEWERS_PER_IP.
var benchNodeEnv = []string{"WATCHING_INTERVAL", "SHARDS", "HEARTBEAT_INTERVAL", "FLUSH_WINDOW", "SEND_BUFFER", "MAX_VIEWERS_PER_IP"}

// startBenchNode runs fanout-svc on redisURL until b ends and returns its base URL once ready.
// Every connect comes from 127.0.0.1, more of them than the default cap per address
// (MAX_VIEWERS_PER_IP, 5,000): the cap is one address's own, its lookup is kept, the limit is not.
func startBenchNode(b *testing.B, redisURL string) string {
	b.Helper()
	env := map[string]string{"REDIS_URL": redisURL, "MAX_VIEWERS_PER_IP": "1000000"}
	for _, k := range benchNodeEnv { // e.g. WATCHING_INTERVAL=0 to see the connect path without watching
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return startNodeEnv(b, env)
}

// startNodeEnv runs fanout-svc with env (plus a free LISTEN_ADDR, quiet logs and a short drain)
// until tb ends and returns its base URL once ready.
func startNodeEnv(tb testing.TB, env map[string]string) string {
	tb.Helper()
	addr := freeport.Addr(tb)
	env["LISTEN_ADDR"], env["LOG_LEVEL"], env["DRAIN_WINDOW"] = addr, "error", "50ms"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"fanout-svc"}, func(k string) string { return env[k] }, io.Discard) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			tb.Errorf("run: %v", err)
		}
	})
	base := "http://" + addr
	poll.Until(tb, 10*time.Second, "fanout-svc to become ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}
