package store_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

func TestLikeUnlikeSemantics(t *testing.T) {
	s, _ := storetest.NewStore(t)
	ctx := context.Background()
	steps := []struct {
		name string
		op   func(context.Context, string, string) (store.Result, error)
		post string
		user string
		want store.Result
	}{
		{"first like", s.Like, "42", "alice", store.Result{Count: 1, Changed: true}},
		{"repeated like", s.Like, "42", "alice", store.Result{Count: 1, Changed: false}},
		{"second user", s.Like, "42", "bob", store.Result{Count: 2, Changed: true}},
		{"other post", s.Like, "43", "alice", store.Result{Count: 1, Changed: true}},
		{"unlike", s.Unlike, "42", "alice", store.Result{Count: 1, Changed: true}},
		{"repeated unlike", s.Unlike, "42", "alice", store.Result{Count: 1, Changed: false}},
		{"like again", s.Like, "42", "alice", store.Result{Count: 2, Changed: true}},
		{"unlike never liked", s.Unlike, "44", "carol", store.Result{Count: 0, Changed: false}},
	}
	for _, st := range steps {
		got, err := st.op(ctx, st.post, st.user)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("%s: got %+v; want %+v", st.name, got, st.want)
		}
	}
	for post, want := range map[string]int64{"42": 2, "43": 1, "44": 0, "never": 0} {
		if got, err := s.Count(ctx, post); err != nil || got != want {
			t.Errorf("Count(%s) = %d, %v; want %d", post, got, err, want)
		}
	}
}

func TestConcurrentLikesCountOnce(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	const users, repeats = 200, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	changed := 0
	errs := make(chan error, users+repeats)
	for i := range users + repeats {
		wg.Go(func() {
			res, err := s.Like(ctx, "p", "u"+strconv.Itoa(i%users))
			if err != nil {
				errs <- err
				return
			}
			if res.Changed {
				mu.Lock()
				changed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, "p"); n != users || changed != users {
		t.Errorf("count %d, changed %d; want %d and %d", n, changed, users, users)
	}
	if n := storetest.CountKeys(t, rdb, storetest.Keys.User("p", "*")); n != users {
		t.Errorf("%d dedup storetest.Keys; want %d", n, users)
	}
}

func TestUnlikeNeverBelowZero(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, storetest.Keys.User("p", "u"), "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Unlike(ctx, "p", "u")
	if err != nil || got != (store.Result{Count: 0, Changed: true}) {
		t.Errorf("got %+v, %v; want count 0 changed", got, err)
	}
}

// TestPublishedUpdates checks the wire form and order of what the scripts publish, and that
// nothing is published for changes that did not happen.
func TestPublishedUpdates(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	msgs := storetest.Subscribe(t, rdb, storetest.Keys.Channel("42"))

	before := time.Now().UnixMicro()
	ops := []struct {
		op   func(context.Context, string, string) (store.Result, error)
		user string
	}{{s.Like, "a"}, {s.Like, "a"}, {s.Like, "b"}, {s.Unlike, "a"}, {s.Unlike, "a"}, {s.Unlike, "zz"}, {s.Like, "c"}}
	for _, o := range ops {
		if _, err := o.op(ctx, "42", o.user); err != nil {
			t.Fatal(err)
		}
	}
	wantCounts := []int64{1, 2, 1, 2}
	var last int64
	for i, want := range wantCounts {
		m := storetest.Receive(t, msgs)
		u, err := update.Parse([]byte(m.Payload))
		if err != nil {
			t.Fatalf("message %d %q: %v", i, m.Payload, err)
		}
		if u.PostID != "42" || u.Count != want {
			t.Errorf("message %d: got %+v; want post 42 count %d", i, u, want)
		}
		if string(u.AppendJSON(nil)) != m.Payload {
			t.Errorf("message %d: got %q; want the exact form %q", i, m.Payload, u.AppendJSON(nil))
		}
		if u.TS <= last || u.TS < before || u.TS > time.Now().UnixMicro()+1e6 {
			t.Errorf("message %d: ts %d; want > %d and near now %d", i, u.TS, last, before)
		}
		last = u.TS
	}
	if ver, _ := rdb.Get(ctx, storetest.Keys.Version("42")).Int64(); ver != last {
		t.Errorf("stored version %d; want the last published ts %d", ver, last)
	}
}

// TestVersionNeverGoesBack: if the stored version is ahead of the Redis clock (a clock step back,
// a failover to a node whose clock is behind), the next version is still previous+1.
func TestVersionNeverGoesBack(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if err := rdb.Set(ctx, storetest.Keys.Version("p"), ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	msgs := storetest.Subscribe(t, rdb, storetest.Keys.Channel("p"))
	if _, err := s.Like(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	u, err := update.Parse([]byte(storetest.Receive(t, msgs).Payload))
	if err != nil || u.TS != ahead+1 {
		t.Errorf("ts %d, %v; want %d", u.TS, err, ahead+1)
	}
}

// TestScriptsSurviveScriptFlush: after Redis loses its script cache (a restart), EVALSHA fails
// with NOSCRIPT and the store falls back to EVAL transparently.
func TestScriptsSurviveScriptFlush(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func(context.Context, string, string) (store.Result, error){s.Like, s.Unlike} {
		if _, err := op(ctx, "p", "u"); err != nil {
			t.Fatalf("after SCRIPT FLUSH: %v", err)
		}
	}
}

func TestRedisDownIsAnError(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	s := store.New(rdb, storetest.Keys, store.Options{})
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.Like(ctx, "p", "u"); err == nil {
		t.Error("Like with Redis down: got nil error")
	}
	if _, err := s.Count(ctx, "p"); err == nil {
		t.Error("Count with Redis down: got nil error")
	}
}
