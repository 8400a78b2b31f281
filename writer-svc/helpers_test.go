package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/testkit/apicheck"
	"github.com/likes/likes/testkit/redistest"
)

var keys = rediskeys.New("likes:")

// trustHeader is the flag a test passes when it names its users in X-User-ID: without it (the
// default, sessions only) the writer ignores that header.
const trustHeader = "--trust-user-header"

// testWriter is a writer built exactly as run builds it (config parsing, newApp, serve.NewServer
// with its timeouts and limits), served on a loopback port.
type testWriter struct {
	URL    string
	Redis  *redistest.Server
	RDB    *redis.Client
	Client *http.Client
}

// startWriter starts a writer on redisSrv (a fresh redis-server when nil) with extra flags.
func startWriter(t *testing.T, redisSrv *redistest.Server, flags ...string) *testWriter {
	t.Helper()
	if redisSrv == nil {
		redisSrv = redistest.Start(t)
	}
	w := serveWriter(t, append([]string{"--redis-url", redisSrv.URL}, flags...)...)
	w.Redis, w.RDB = redisSrv, redisSrv.Client(t)
	return w
}

// serveWriter builds a writer from flags, which name its Redis, and serves it on loopback. The
// caller sets Redis and RDB.
func serveWriter(t *testing.T, flags ...string) *testWriter {
	t.Helper()
	a, cfg, log := buildWriter(t, flags...)
	ts := httptest.NewUnstartedServer(a.handler)
	ts.Config = serve.NewServer(cfg.Serve, a.handler, log)
	ts.Start()
	t.Cleanup(ts.Close)
	apicheck.Serve(t, ts.Listener.Addr().String(), apicheck.Writer()) // every reply as its document says
	client := &http.Client{Timeout: 10 * time.Second, Transport: apicheck.Wrap(nil)}
	t.Cleanup(client.CloseIdleConnections)
	return &testWriter{URL: ts.URL, Client: client}
}

// buildWriter builds a writer from flags, which name its Redis, as run builds it (config
// parsing, newApp), and closes it when the test ends.
func buildWriter(t *testing.T, flags ...string) (*app, Config, *zap.Logger) {
	t.Helper()
	// Every test's client is one loopback address: the per-address limits are off unless a test
	// sets them, and so is the per-user limit on new posts (tests name many posts).
	args := append([]string{"writer-svc", "--listen", "127.0.0.1:0", "--like-addr-rate", "off",
		"--new-post-rate", "off", "--new-post-addr-rate", "off", "--user-data-addr-rate", "off", "--read-addr-rate", "off", "--session-refresh-rate", "off"}, flags...)
	cfg, err := loadConfig(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.close() })
	return a, cfg, log
}

// reply is a response with its decoded JSON body.
type reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// do sends a request with headers given as "Name: value" strings.
func (w *testWriter) do(t *testing.T, method, path string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, w.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			t.Fatalf("%s %s: bad JSON %q: %v", method, path, raw, err)
		}
	}
	return r
}

func (w *testWriter) like(t *testing.T, post, user string) reply {
	t.Helper()
	return w.do(t, http.MethodPost, "/like/"+post, "X-User-ID: "+user)
}

// count reads the post's counter straight from Redis.
func (w *testWriter) count(t *testing.T, post string) int64 {
	t.Helper()
	n, err := w.RDB.Get(context.Background(), keys.Count(post)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return n
}

// dedupKeys counts the post's dedup keys.
func (w *testWriter) dedupKeys(t *testing.T, post string) int {
	t.Helper()
	n := 0
	iter := w.RDB.Scan(context.Background(), 0, keys.User(post, "*"), 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// dataKeys counts the keys in Redis besides the session signing keys, which a writer with
// sessions on (the default) creates at start: what requests wrote.
func (w *testWriter) dataKeys(t *testing.T) int64 {
	t.Helper()
	var n int64
	sessionKeys := keys.SessionKey("")
	iter := w.RDB.Scan(context.Background(), 0, "*", 1000).Iterator()
	for iter.Next(context.Background()) {
		if !strings.HasPrefix(iter.Val(), sessionKeys) {
			n++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// lastingKeys is dataKeys less the keys that expire within lastingFor: what a hostile request
// may not change. A key the suite's own checks wrote just before (a like's batch key, 3 s) may
// expire between two counts; a hostile request that stored a like would still change the
// count's and the dedup keys, which last.
func (w *testWriter) lastingKeys(t *testing.T) int64 {
	t.Helper()
	const lastingFor = time.Minute
	ctx := context.Background()
	var all []string
	sessionKeys := keys.SessionKey("")
	iter := w.RDB.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		if !strings.HasPrefix(iter.Val(), sessionKeys) {
			all = append(all, iter.Val())
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	ttls := make([]*redis.DurationCmd, len(all))
	if _, err := w.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range all {
			ttls[i] = p.PTTL(ctx, k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range ttls {
		if d := c.Val(); d == -1 || d > lastingFor { // -1: no expiry (-2, gone meanwhile, is not counted)
			n++
		}
	}
	return n
}

func wantLike(t *testing.T, got reply, post string, count int, liked bool) {
	t.Helper()
	if got.Status != http.StatusOK || got.Body["post_id"] != post || got.Body["count"] != float64(count) || got.Body["liked"] != liked {
		t.Errorf("got %d %s; want 200 post %s count %d liked %v", got.Status, got.Raw, post, count, liked)
	}
}
