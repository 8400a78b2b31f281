package userlikes

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// roundTrips counts what a client sends to each Redis node: pipelines (one round trip each) and
// single commands, so a test can tell a batch read from a loop of GETs. What go-redis sends on its
// own to set up a connection or learn the cluster's slots is not counted.
type roundTrips struct {
	mu        sync.Mutex
	pipelines map[string]int // node address -> pipelines
	commands  map[string]int // node address -> commands outside pipelines
}

func newRoundTrips() *roundTrips {
	return &roundTrips{pipelines: map[string]int{}, commands: map[string]int{}}
}

// hook returns a go-redis hook that counts against addr.
func (rt *roundTrips) hook(addr string) redis.Hook { return countingHook{rt: rt, addr: addr} }

func (rt *roundTrips) reset() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	clear(rt.pipelines)
	clear(rt.commands)
}

func (rt *roundTrips) snapshot() (pipelines, commands map[string]int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	pipelines, commands = map[string]int{}, map[string]int{}
	for k, v := range rt.pipelines {
		pipelines[k] = v
	}
	for k, v := range rt.commands {
		commands[k] = v
	}
	return pipelines, commands
}

type countingHook struct {
	rt   *roundTrips
	addr string
}

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !setupCommand(cmd) {
			h.rt.mu.Lock()
			h.rt.commands[h.addr]++
			h.rt.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !setupCommand(cmds[0]) {
			h.rt.mu.Lock()
			h.rt.pipelines[h.addr]++
			h.rt.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

// setupCommand reports whether go-redis sent cmd by itself: a new connection's handshake or a
// cluster topology query.
func setupCommand(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly", "cluster", "ping":
		return true
	}
	return false
}

func TestReadCountsVersionsAndLikes(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	for _, l := range []struct{ post, user string }{{"42", "alice"}, {"42", "bob"}, {"43", "alice"}, {"44", "bob"}} {
		if _, err := s.Like(ctx, l.post, l.user); err != nil {
			t.Fatal(err)
		}
	}
	rt := newRoundTrips()
	rdb.AddHook(rt.hook("single"))
	rd := NewReader(rdb, storetest.Keys, 100)
	posts := []string{"43", "never", "42", "44"}

	got, err := rd.Read(ctx, posts, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if pipelines, commands := rt.snapshot(); pipelines["single"] != 1 || commands["single"] != 0 {
		t.Errorf("read of %d posts sent %d pipelines and %d single commands; want 1 and 0", len(posts), pipelines["single"], commands["single"])
	}
	wantCounts := []int64{1, 0, 2, 1}
	wantLiked := []bool{true, false, true, false}
	for i, st := range got {
		if st.PostID != posts[i] || st.Count != wantCounts[i] || st.Liked != wantLiked[i] {
			t.Errorf("post %d: got %+v; want %s count %d liked %t", i, st, posts[i], wantCounts[i], wantLiked[i])
		}
		ver, _ := rdb.Get(ctx, storetest.Keys.Version(posts[i])).Int64()
		if st.Version != ver {
			t.Errorf("post %s version %d; want %d (the stored ver)", posts[i], st.Version, ver)
		}
	}

	anon, err := rd.Read(ctx, posts, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range anon {
		if st.Liked || st.Count != wantCounts[i] {
			t.Errorf("read without a user, post %s: got %+v; want count %d, not liked", posts[i], st, wantCounts[i])
		}
	}
}

// TestReadOnClusterOneRoundTripPerNode reads 60 posts spread over a 3-master cluster: the
// answer is right for every post, reactions included, and each node gets exactly one pipeline.
func TestReadOnClusterOneRoundTripPerNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rt := newRoundTrips()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(),
		NewClient: func(opt *redis.Options) *redis.Client {
			node := redis.NewClient(opt)
			node.AddHook(rt.hook(opt.Addr))
			return node
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	s := store.New(rdb, storetest.Keys, store.Options{Cluster: true})
	posts := make([]string, 60)
	owners := map[string]bool{}
	for i := range posts {
		posts[i] = "p" + strconv.Itoa(i)
		owners[c.NodeFor(storetest.Keys.Count(posts[i])).Addr] = true
		if i%3 == 0 {
			if _, err := s.Like(ctx, posts[i], "alice"); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 0 {
			if _, err := s.Like(ctx, posts[i], "bob"); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 { // a reaction on a Cluster: its hash and gate are in the post's slot
			if res, err := s.React(ctx, posts[i], "carol", "clap"); err != nil || res != (store.Result{Count: 1, Changed: true, Version: res.Version}) || res.Version == 0 {
				t.Fatalf("reaction: %+v, %v; want the first clap, with a version", res, err)
			}
		}
	}
	if len(owners) != 3 {
		t.Fatalf("60 posts landed on %d nodes; want all 3", len(owners))
	}
	rt.reset()

	got, err := NewReader(rdb, storetest.Keys, 100).Read(ctx, posts, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range got {
		var want int64
		if i%3 == 0 {
			want++
		}
		if i%2 == 0 {
			want++
		}
		if st.PostID != posts[i] || st.Count != want || st.Liked != (i%3 == 0) {
			t.Errorf("post %s: got %+v; want count %d liked %t", posts[i], st, want, i%3 == 0)
		}
		claps := int64(0)
		if i%5 == 0 {
			claps = 1
		}
		if st.Reactions["clap"] != claps || len(st.Reactions) != int(claps) {
			t.Errorf("post %s: reactions %v; want one clap on every fifth post", posts[i], st.Reactions)
		}
	}
	pipelines, commands := rt.snapshot()
	for addr := range owners {
		if pipelines[addr] != 1 {
			t.Errorf("node %s got %d pipelines; want 1", addr, pipelines[addr])
		}
	}
	if len(pipelines) != len(owners) || len(commands) != 0 {
		t.Errorf("pipelines per node %v, single commands %v; want one pipeline on each of %d nodes and no single commands", pipelines, commands, len(owners))
	}
}
