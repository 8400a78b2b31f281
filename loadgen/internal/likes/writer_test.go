package likes

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestRealWriterCountsEveryLike: against writer-svc itself, every like loadgen acknowledges is
// counted, by users named with session tokens signed with the key the writer keeps in Redis (the
// writer trusting no X-User-ID, as behind the Compose balancer), with the benchmark key of a
// writer started with BENCH_SESSION_KEY_FILE (for load-test users, bench-..., as loadgen's
// --identity bench names them), or named in X-User-ID for a writer with TRUST_USER_HEADER=true.
func TestRealWriterCountsEveryLike(t *testing.T) {
	bin := buildWriter(t)
	srv := redistest.Start(t)
	keyFile, benchKey := benchKey(t)
	for _, tt := range []struct {
		identity string
		users    string // the prefix of the likes' user ids
		env      []string
	}{
		{"session", "lg-session-u", []string{"SESSIONS=true"}},
		{"bench", sessiontoken.BenchUserPrefix + "lg-bench-u", []string{"SESSIONS=true", "BENCH_SESSION_KEY_FILE=" + keyFile}},
		{"header", "lg-header-u", []string{"TRUST_USER_HEADER=true"}},
	} {
		t.Run(tt.identity, func(t *testing.T) {
			writer := startWriter(t, bin, srv.Addr, tt.env...)
			var opts []Option
			if tt.identity != "header" {
				if status, _, err := clienttest.TryLike(writer, "probe", "mallory"); err != nil || status != http.StatusUnauthorized {
					t.Fatalf("a like naming X-User-ID: %d, %v; want 401 from a writer that trusts no header", status, err)
				}
			}
			switch tt.identity {
			case "session":
				opts = append(opts, WithSessions(follow(t, srv.Client(t))))
			case "bench":
				opts = append(opts, WithSessions(benchKey))
			}
			posts := []string{tt.identity + "-0", tt.identity + "-1"}
			l := New(writer, posts, tt.users, 8, 5*time.Second, append(opts, WithPipeline(2))...)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			l.Closed(ctx, 16)
			acked, errs, _ := l.Recorder().Totals()
			if acked < 10 || errs != 0 {
				t.Fatalf("acked %d, errors %d (last %q); want many acked and none failed", acked, errs, l.Recorder().LastError())
			}
			var counted int64
			for _, p := range posts {
				counted += clienttest.CountOf(t, writer, p)
			}
			if counted != acked {
				t.Errorf("writer counted %d likes; loadgen acked %d", counted, acked)
			}
		})
	}
}

// TestRealWriterRefusesBenchTokensOutsideTheNamespace: the benchmark key signs for load-test
// users only. The same minter's likes for users outside bench-... are refused (401) by a writer in
// benchmark mode, and its likes for load-test users by a writer that is not; neither counts one.
func TestRealWriterRefusesBenchTokensOutsideTheNamespace(t *testing.T) {
	bin := buildWriter(t)
	srv := redistest.Start(t)
	keyFile, benchKey := benchKey(t)
	for _, tt := range []struct {
		name, users string
		env         []string
	}{
		{"users outside the namespace", "lg-outside-u", []string{"SESSIONS=true", "BENCH_SESSION_KEY_FILE=" + keyFile}},
		{"benchmark mode off", sessiontoken.BenchUserPrefix + "lg-off-u", []string{"SESSIONS=true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writer := startWriter(t, bin, srv.Addr, tt.env...)
			post := strings.ReplaceAll(tt.name, " ", "-")
			l := New(writer, []string{post}, tt.users, 2, 5*time.Second, WithSessions(benchKey))
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			l.Closed(ctx, 2)
			acked, errs, _ := l.Recorder().Totals()
			if acked != 0 || errs == 0 || !strings.Contains(l.Recorder().LastError(), "401") {
				t.Errorf("acked %d, errors %d (last %q); want every like refused with 401", acked, errs, l.Recorder().LastError())
			}
			if n := clienttest.CountOf(t, writer, post); n != 0 {
				t.Errorf("post %s counts %d; want 0", post, n)
			}
		})
	}
}

// benchKey writes a benchmark key file for a writer's BENCH_SESSION_KEY_FILE and returns its path
// and the key source loadgen's --identity bench makes of it.
func benchKey(t *testing.T) (string, sessiontoken.StaticKey) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bench-session.key")
	if err := os.WriteFile(path, []byte("0123456789abcdef0123456789abcdef-loadgen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := sessiontoken.ReadBenchKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, sessiontoken.StaticKey{K: key}
}

// follow signs with the deployment's current session key, as loadgen ramp does.
func follow(t *testing.T, rdb *redis.Client) *sessiontoken.Follower {
	t.Helper()
	ring := sessiontoken.NewKeyring(rdb, rediskeys.New("likes:"), sessiontoken.KeyringOptions{
		Rotate: sessiontoken.DefaultKeyRotate, Life: sessiontoken.DefaultTTL + sessiontoken.DefaultRefreshGrace,
	}, zap.NewNop())
	t.Cleanup(ring.Close)
	f, err := sessiontoken.Follow(context.Background(), ring, sessiontoken.FollowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// buildWriter builds writer-svc for the test.
func buildWriter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "writer-svc")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/likes/likes/writer-svc").CombinedOutput()
	if err != nil {
		t.Fatalf("build writer-svc: %v\n%s", err, out)
	}
	return bin
}

// startWriter runs the writer at bin on redisAddr with env (KEY=VALUE) and returns its URL once it
// is ready; it is stopped when the test ends. Nothing about identity is inherited from the test's
// own environment: the test says which mode it runs.
func startWriter(t *testing.T, bin, redisAddr string, env ...string) string {
	t.Helper()
	addr := freeport.Addr(t)
	cmd := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRUST_USER_HEADER=") && !strings.HasPrefix(kv, "SESSIONS=") && !strings.HasPrefix(kv, "BENCH_SESSION_KEY_FILE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Every like here comes from one loopback address, as a load test's do: the per-address like
	// limit is off, or how many pass would depend on how fast this machine sends them.
	cmd.Env = append(cmd.Env, append([]string{"LISTEN_ADDR=" + addr, "REDIS_URL=redis://" + redisAddr + "/0", "LOG_LEVEL=warn",
		"LIKE_ADDR_RATE=off"}, env...)...)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { // exits with the process
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("writer-svc logs:\n%s", logs.String())
		}
	})
	url := "http://" + addr
	poll.Until(t, 15*time.Second, "writer-svc answers /readyz", func() bool {
		select {
		case <-exited:
			t.Fatalf("writer-svc exited at start:\n%s", logs.String())
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url
}

// TestRealWriterTakesAnAudience: an audience of 20 reacting at its ceiling (each person once per
// the writer's REACTION_INTERVAL of 200 ms: 100 reactions/s) is never refused by a person's gate,
// the kinds go in turn, and the writer stores every reaction acknowledged, each carried by an
// update whose version the answer names.
func TestRealWriterTakesAnAudience(t *testing.T) {
	bin := buildWriter(t)
	srv := redistest.Start(t)
	writer := startWriter(t, bin, srv.Addr, "TRUST_USER_HEADER=true", "REACTION_INTERVAL=200ms")
	const interval = 200 * time.Millisecond
	kinds := []string{"clap", "heart"}
	l := New(writer, []string{"room"}, "lg-rx-u", 32, 5*time.Second, WithReactions(kinds, interval))
	defer l.Close()
	l.SetAudience(20)
	start := time.Now()
	w := &Window{Start: start, End: start.Add(time.Hour)}
	l.Recorder().SetWindow(w)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.Open(ctx, 20/interval.Seconds(), 256)
	acked, errs, _ := l.Recorder().Totals()
	if acked < 50 || errs != 0 {
		t.Fatalf("acked %d, errors %d (last %q); want about 100 acked and none refused", acked, errs, l.Recorder().LastError())
	}
	for _, a := range w.Acks() {
		if a.TS <= 0 || a.Count <= 0 {
			t.Fatalf("ack %+v; want the kind's count and the update's version", a)
		}
	}
	rx := clienttest.ReactionsOf(t, writer, "room")
	if rx["clap"]+rx["heart"] != acked || rx["clap"] < acked/2-1 {
		t.Errorf("stored %v; want the %d acknowledged, the kinds in turn", rx, acked)
	}
}
