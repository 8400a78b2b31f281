// Package storetest holds the helpers that the tests of the store and of the packages built on it
// share: the key scheme, a store on a fresh Redis or on one at an address, likes in batches and
// the checks of a post's likers chunks, a one-node Cluster, and pub/sub and key-count helpers.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redisconn"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
)

// Keys is the key scheme of the tests.
var Keys = rediskeys.New("likes:")

// NewStore returns a store on a fresh Redis, its script loaded, and a client of that Redis.
func NewStore(t *testing.T) (*store.Store, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	s := store.New(rdb, Keys, store.Options{})
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, rdb
}

// StoreOn returns a store on the Redis at addr, its script loaded, through a client with the
// settings the writer runs with (pkg/redisconn: go-redis' retries, a request's deadline bounding
// its call), closed when the test ends.
func StoreOn(t *testing.T, addr string, o store.Options) *store.Store {
	t.Helper()
	rdb, err := redisconn.New(redisconn.Config{URL: "redis://" + addr + "/0", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	s := store.New(rdb, Keys, o)
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// LikeBatches likes post by fresh users named prefix+i, one Store.Apply per size, and checks
// that each like was new and counted in order. It returns the users in the order they liked and
// the batch each one was in.
func LikeBatches(t *testing.T, s *store.Store, post, prefix string, sizes ...int) ([]string, map[string]int) {
	t.Helper()
	ctx := context.Background()
	before, err := s.Count(ctx, post)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	batchOf := make(map[string]int)
	for b, n := range sizes {
		changes := make([]store.Change, n)
		for i := range changes {
			u := prefix + strconv.Itoa(len(users))
			users = append(users, u)
			batchOf[u] = b
			changes[i] = store.Change{User: u}
		}
		res, err := s.Apply(ctx, post, changes)
		if err != nil {
			t.Fatalf("batch %d of %d likes: %v", b, n, err)
		}
		for i, r := range res {
			if want := before + int64(len(users)-n+i+1); r != (store.Result{Count: want, Changed: true}) {
				t.Fatalf("batch %d, like %d: got %+v; want count %d changed", b, i, r, want)
			}
		}
	}
	return users, batchOf
}

// CheckLikers checks post's likers chunks against want, the users who like it: the union of the
// chunks is want, no user is in two chunks, every user's dedup key holds the number of the chunk
// that lists them, the count is len(want), no chunk lies above the current one and none holds
// more than store.LikersChunk + batch (one batch past full). It returns the current chunk and the
// chunk of each user.
func CheckLikers(t *testing.T, rdb *redis.Client, post string, want []string, batch int) (int64, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	cur, err := rdb.Get(ctx, Keys.LikersChunk(post)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	chunkOf := make(map[string]int64)
	for c := int64(0); c <= cur; c++ {
		members, err := rdb.LRange(ctx, Keys.Likers(post, c), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(members) > store.LikersChunk+batch {
			t.Errorf("chunk %d holds %d likers; want at most %d (%d + one batch of %d)", c, len(members), store.LikersChunk+batch, store.LikersChunk, batch)
		}
		for _, u := range members {
			if prev, dup := chunkOf[u]; dup {
				t.Errorf("%s is in chunks %d and %d", u, prev, c)
			}
			chunkOf[u] = c
		}
	}
	if n := rdb.Exists(ctx, Keys.Likers(post, cur+1)).Val(); n != 0 {
		t.Errorf("chunk %d exists above the current chunk %d", cur+1, cur)
	}
	for _, u := range want {
		c, listed := chunkOf[u]
		if !listed {
			t.Errorf("%s likes %s but no chunk lists them", u, post)
			continue
		}
		if v, err := rdb.Get(ctx, Keys.User(post, u)).Result(); err != nil || v != strconv.FormatInt(c, 10) {
			t.Errorf("dedup key of %s: %q, %v; want %d, the chunk that lists them", u, v, err, c)
		}
	}
	if len(chunkOf) != len(want) {
		t.Errorf("the chunks list %d likers; want %d", len(chunkOf), len(want))
	}
	if n := CountKeys(t, rdb, Keys.User(post, "*")); n != len(want) {
		t.Errorf("%d dedup keys; want %d", n, len(want))
	}
	if n, err := rdb.Get(ctx, Keys.Count(post)).Int64(); err != nil || n != int64(len(want)) {
		t.Errorf("count %d, %v; want %d", n, err, len(want))
	}
	return cur, chunkOf
}

// OneNodeCluster starts a one-node Redis Cluster that owns every slot and returns a client of it,
// closed at the test's end.
func OneNodeCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	if _, err := srv.Do("CLUSTER", "ADDSLOTSRANGE", 0, 16383); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "cluster_state:ok", func() bool {
		info, err := srv.Do("CLUSTER", "INFO")
		s, _ := info.(string)
		return err == nil && strings.Contains(s, "cluster_state:ok")
	})
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Subscribe subscribes to channel and returns its messages once the subscription is confirmed.
func Subscribe(t *testing.T, rdb *redis.Client, channel string) <-chan *redis.Message {
	t.Helper()
	ps := rdb.Subscribe(context.Background(), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(context.Background()); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	return ps.Channel()
}

// Receive returns the next message of msgs, failing the test after 5 s without one.
func Receive(t *testing.T, msgs <-chan *redis.Message) *redis.Message {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
		return nil
	}
}

// CountKeys returns how many keys match pattern (SCAN).
func CountKeys(t *testing.T, rdb redis.UniversalClient, pattern string) int {
	t.Helper()
	n := 0
	iter := rdb.Scan(context.Background(), 0, pattern, 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(fmt.Errorf("scan %s: %w", pattern, err))
	}
	return n
}
