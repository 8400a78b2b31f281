package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestServicesUnderACL runs the services as the shipped deployments do, each as its own Redis user
// on a Redis that requires them (pkg/redisacl): a session is taken and a like stored as the
// writer, and a viewer of a fanout node connected as fanout gets the count and the "watching now"
// number, so each user's rules hold all its service does. A writer given fanout's credentials,
// or none, cannot store a like: 503, and the count does not move.
func TestServicesUnderACL(t *testing.T) {
	acl := redistest.NewACL(t, "likes:")
	srv := acl.Start(t)
	as := func(user string) []string {
		return []string{"REDIS_USERNAME=" + user, "REDIS_PASSWORD_FILE=" + acl.PasswordFile(user)}
	}
	writer := StartWriter(t, srv.URL, append(as(redisacl.Writer), "TRUST_USER_HEADER=false")...)
	fanout := StartFanout(t, srv.URL, append(as(redisacl.Fanout), watchEnv...)...)
	v := Watch(t, fanout.URL+"/sse/acl")

	s, err := clienttest.TakeSession(writer.URL)
	if err != nil {
		t.Fatalf("a session from the writer as its user: %v", err)
	}
	if status, r, err := clienttest.TryLikeAs(writer.URL, "acl", s); err != nil || status != http.StatusOK || !r.Liked {
		t.Fatalf("a like through the writer as its user: %d %+v %v; want 200 liked", status, r, err)
	}
	WaitCount(t, 10*time.Second, "acl", 1, v)
	poll.Until(t, 10*watchInterval, "the watching number as fanout's user", func() bool {
		n, ok := v.Watching("acl")
		return ok && n == 1
	})

	for name, env := range map[string][]string{
		"fanout's credentials": as(redisacl.Fanout),
		"no credentials":       nil,
	} {
		w := StartWriter(t, srv.URL, env...)
		if status, _, err := clienttest.TryLike(w.URL, "acl", "mallory"); err != nil || status != http.StatusServiceUnavailable {
			t.Errorf("a like through a writer with %s: %d %v; want 503", name, status, err)
		}
	}
	if n := clienttest.CountOf(t, writer.URL, "acl"); n != 1 {
		t.Errorf("the count is %d after the refused likes; want 1", n)
	}
}

// TestLoadgenRampUnderACL runs the ramp as the shipped deployments do: the writer in benchmark
// mode (BENCH_SESSION_KEY_FILE), loadgen signing its likes with that key (--identity bench, no
// session key of the deployment's) and reading Redis as the monitor user, which can read no key.
// Every like is stored and delivered, and Redis's figures are read.
func TestLoadgenRampUnderACL(t *testing.T) {
	acl := redistest.NewACL(t, "likes:")
	srv := acl.Start(t)
	benchKey := acl.PasswordFile(redisacl.Sentinel) // any 64-character secret will do as the key
	as := func(user string) []string {
		return []string{"REDIS_USERNAME=" + user, "REDIS_PASSWORD_FILE=" + acl.PasswordFile(user)}
	}
	writer := StartWriter(t, srv.URL, append(as(redisacl.Writer), "TRUST_USER_HEADER=false", "BENCH_SESSION_KEY_FILE="+benchKey)...)
	node := StartFanout(t, srv.URL, as(redisacl.Fanout)...)
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", node.URL, "--conns", "60", "--posts", "2",
		"--rate", "20", "--warmup", "300ms", "--window", "1s", "--identity", "bench", "--bench-key-file", benchKey,
		"--redis", srv.Addr, "--redis-username", redisacl.Monitor, "--redis-password-file", acl.PasswordFile(redisacl.Monitor), "--json")
	var res struct {
		Phases []map[string]any `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Phases) != 1 {
		t.Fatalf("decode JSON: %v, %d phases\n%s", err, len(res.Phases), out)
	}
	ph := res.Phases[0]
	for field, want := range map[string]float64{"like_errors": 0, "delivery_pct": 100, "conns_failed": 0} {
		if got, _ := ph[field].(float64); got != want {
			t.Errorf("%s = %v; want %v", field, ph[field], want)
		}
	}
	if ph["redis_cpu_pct"] == nil || ph["redis_subscribers"] == nil {
		t.Errorf("Redis CPU %v, subscribers %v: the monitor user's readings failed", ph["redis_cpu_pct"], ph["redis_subscribers"])
	}
}
