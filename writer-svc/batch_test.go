package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// backend is the Redis a test writer stores in: one redis-server, or a 3-master cluster in which
// post's shard is the server the test watches, kills and restarts.
type backend struct {
	writer  *testWriter
	data    redis.UniversalClient // every key, whatever its slot (writer.RDB is the post's server)
	kill    func()
	restart func()
}

type backendFunc func(t *testing.T, post string, redisArgs []string, flags ...string) *backend

var backends = []struct {
	name  string
	start backendFunc
}{
	{"single", singleBackend},
	{"single with a window", func(t *testing.T, post string, redisArgs []string, flags ...string) *backend {
		return singleBackend(t, post, redisArgs, append(flags, "--batch-window", "5ms", "--batch-size", "64")...)
	}},
	{"cluster", clusterBackend},
}

// The backends' writers trust X-User-ID: their tests name many users without taking sessions.

func singleBackend(t *testing.T, _ string, redisArgs []string, flags ...string) *backend {
	srv := redistest.Start(t, redisArgs...)
	w := startWriter(t, srv, append([]string{trustHeader}, flags...)...)
	return &backend{writer: w, data: w.RDB, kill: srv.Kill, restart: srv.Restart}
}

func clusterBackend(t *testing.T, post string, redisArgs []string, flags ...string) *backend {
	c := redistest.StartCluster(t, 3, redisArgs...)
	w := serveWriter(t, append([]string{"--redis-cluster-addrs", c.AddrList(), trustHeader}, flags...)...)
	w.Redis = c.NodeFor(keys.Count(post))
	w.RDB = w.Redis.Client(t)
	i := c.Index(w.Redis)
	return &backend{writer: w, data: c.Client(t), kill: func() { c.Kill(i) }, restart: func() { c.Restart(i) }}
}

// change is one request of a test load: a like or an unlike of the post by user.
type change struct {
	user   string
	unlike bool
}

// answer is what the writer replied to one change.
type answer struct {
	change
	status int
	count  int64
	liked  bool
}

// send makes one change over HTTP.
func (w *testWriter) send(client *http.Client, post string, c change) (answer, error) {
	method := http.MethodPost
	if c.unlike {
		method = http.MethodDelete
	}
	req, err := http.NewRequest(method, w.URL+"/like/"+post, nil)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("X-User-ID", c.user)
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{change: c, status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		return a, nil
	}
	var body struct {
		Count int64
		Liked bool
	}
	if err := decodeJSON(resp, &body); err != nil {
		return a, fmt.Errorf("decode reply: %w", err)
	}
	a.count, a.liked = body.Count, body.Liked
	return a, nil
}

// loadClient keeps a connection per concurrent sender, as a balancer in front of writers would.
func loadClient(t *testing.T, conns int) *http.Client {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestThousandUsersOnePost: 1,000 users like and unlike one post concurrently, with repeats of
// the same user in one batch and across batches. Replaying the batches in the order Redis ran
// them (MONITOR) gives, for every request, the count and liked it must have been answered:
// every answer matches, and the final count is the replay's and the number of dedup keys.
func TestThousandUsersOnePost(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			const post = "viral"
			be := b.start(t, post, nil, "--request-timeout", "20s", "--write-timeout", "30s")
			w := be.writer
			mon := startMonitor(t, w.Redis)
			work := thousandUsersLoad()

			const senders = 200
			client := loadClient(t, senders)
			queue := make(chan change)
			answers := make(chan answer, len(work))
			var wg sync.WaitGroup
			for range senders {
				wg.Go(func() {
					for c := range queue {
						a, err := w.send(client, post, c)
						if err != nil || a.status != 200 {
							t.Errorf("%+v: %d, %v; want 200", c, a.status, err)
						}
						answers <- a
					}
				})
			}
			for _, c := range work {
				queue <- c
			}
			close(queue)
			wg.Wait()
			close(answers)

			replay := replayBatches(t, mon.scripts(t), post)
			if got := replay.changes; got != len(work) {
				t.Fatalf("Redis applied %d changes; want the %d sent, each once", got, len(work))
			}
			if replay.largest < 2 || replay.repeatsInBatch == 0 {
				t.Fatalf("largest batch %d, %d batches with a repeated user: the load did not batch, the test proves nothing",
					replay.largest, replay.repeatsInBatch)
			}
			got := map[change][]outcome{}
			for a := range answers {
				got[a.change] = append(got[a.change], outcome{a.count, a.liked})
			}
			for c, want := range replay.answers {
				slices.SortFunc(want, compareOutcomes)
				slices.SortFunc(got[c], compareOutcomes)
				if !slices.Equal(got[c], want) {
					t.Errorf("%+v answered %v; Redis' order says %v", c, got[c], want)
				}
			}
			if n, keys := w.count(t, post), w.dedupKeys(t, post); n != replay.count || keys != int(replay.count) {
				t.Errorf("count %d, %d dedup keys; want %d and %d", n, keys, replay.count, replay.count)
			}
			t.Logf("%d changes in %d script calls (largest %d, %d with a user repeated); final count %d",
				replay.changes, replay.calls, replay.largest, replay.repeatsInBatch, replay.count)
		})
	}
}

// thousandUsersLoad is 1,000 users' likes and unlikes (one in three an unlike), 2 to 6 per
// user, in a fixed random order. A third of the users send theirs back to back, so that they
// are in flight together and share batches.
func thousandUsersLoad() []change {
	rng := rand.New(rand.NewPCG(13, 2026))
	var chunks [][]change
	for u := range 1000 {
		user := "user-" + strconv.Itoa(u)
		ops := make([]change, 2+rng.IntN(5))
		for i := range ops {
			ops[i] = change{user: user, unlike: rng.IntN(3) == 0}
		}
		if u%3 == 0 {
			chunks = append(chunks, ops)
			continue
		}
		for _, op := range ops {
			chunks = append(chunks, []change{op})
		}
	}
	rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
	return slices.Concat(chunks...)
}

// outcome is the part of an answer the order of changes decides.
type outcome struct {
	count int64
	liked bool
}

func compareOutcomes(a, b outcome) int {
	if a.count != b.count {
		return int(a.count - b.count)
	}
	if a.liked == b.liked {
		return 0
	}
	if a.liked {
		return 1
	}
	return -1
}

// replay is a post's history rebuilt from the script calls Redis ran.
type replay struct {
	answers        map[change][]outcome // what each change must have been answered
	count          int64
	changes, calls int
	largest        int
	repeatsInBatch int // calls in which some user appears twice
}

// replayBatches applies the like script's semantics to the script calls Redis ran (EVALSHA
// arguments: sha, numkeys, the keys with the count first and the batch key fourth, then post,
// publish command, one L or U per change, deadline, chunk guess, m, m chunk numbers, the changes'
// user ids, index flag; see changeScript), in order, from an empty post. A call whose batch key was
// seen before is a re-run, which changes nothing (go-redis retried it). A call whose batch key the
// script never wrote returned before changing anything: sent back for its likers chunks (the store
// calls again under a new batch key) or refused for its deadline (answered 503, which the test
// does not expect with its long timeout).
func replayBatches(t *testing.T, log scriptLog, post string) replay {
	t.Helper()
	for _, call := range log.evals {
		if len(call) > 3 && call[3] == keys.Count(post) {
			t.Fatalf("a like script ran by EVAL (script cache lost?): the replay would count it twice: %.200q", call)
		}
	}
	r := replay{answers: map[change][]outcome{}}
	liked := map[string]bool{}
	ran := map[string]bool{} // batch keys
	for _, call := range log.calls {
		numkeys, err := strconv.Atoi(call[2])
		if err != nil || len(call) < 3+numkeys+6 || call[3] != keys.Count(post) {
			continue // another post's call
		}
		if ran[call[6]] || !log.written[call[6]] {
			continue
		}
		ran[call[6]] = true
		argv := call[3+numkeys:]
		ops := argv[2]
		m, err := strconv.Atoi(argv[5])
		// This test sends no reactions (r, ARGV[8+m+n]) and its writers spend no rate limit
		// buckets (q, ARGV[10+m+n]).
		if err != nil || len(argv) < 10+m+len(ops) || argv[7+m+len(ops)] != "0" || argv[9+m+len(ops)] != "0" {
			t.Fatalf("script call with %d arguments, ops %q, m %q", len(argv), ops, argv[5])
		}
		users := argv[6+m : 6+m+len(ops)]
		r.calls++
		r.changes += len(users)
		r.largest = max(r.largest, len(users))
		seen := map[string]bool{}
		repeated := false
		for i, user := range users {
			repeated = repeated || seen[user]
			seen[user] = true
			c := change{user: user, unlike: ops[i] == 'U'}
			switch {
			case !c.unlike && !liked[user]:
				liked[user] = true
				r.count++
				r.answers[c] = append(r.answers[c], outcome{r.count, true})
			case c.unlike && liked[user]:
				liked[user] = false
				r.count = max(r.count-1, 0)
				r.answers[c] = append(r.answers[c], outcome{r.count, false})
			default:
				r.answers[c] = append(r.answers[c], outcome{r.count, false})
			}
		}
		if repeated {
			r.repeatsInBatch++
		}
	}
	return r
}

// TestRedisKilledMidBatch crashes the post's Redis (SIGKILL, appendfsync always) while 1,000
// users like and unlike one post in batches, restarts it from its append-only file and checks
// that no request was answered 200 for a change that is not stored:
//   - 600 users only like, three times each in a row from 300 senders (repeats inside a batch):
//     any like answered 200 is stored;
//   - 400 users like and unlike in turn, one request at a time: if a user's last request was
//     answered 200 the stored state is its; if it failed, the state is before or after it.
//
// The count equals the dedup keys after the restart: no batch was stored in part.
func TestRedisKilledMidBatch(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			const post = "crash"
			be := b.start(t, post, []string{"--appendonly", "yes", "--appendfsync", "always"},
				"--request-timeout", "2s", "--redis-timeout", "2s")
			w := be.writer
			const likers, likeSenders, togglers, killAfter = 600, 300, 400, 1500
			client := loadClient(t, likeSenders+togglers)
			var acked atomic.Int32
			killed := make(chan struct{})
			var killOnce sync.Once
			ack := func() {
				if acked.Add(1) == killAfter {
					killOnce.Do(func() { be.kill(); close(killed) })
				}
			}

			likedOK := make([]atomic.Bool, likers)
			likes := make(chan int)
			var wg sync.WaitGroup
			for range likeSenders {
				wg.Go(func() {
					for u := range likes {
						a, err := w.send(client, post, change{user: "liker-" + strconv.Itoa(u)})
						if err == nil && a.status == 200 {
							likedOK[u].Store(true)
							ack()
						} else if err != nil || a.status != 503 {
							t.Errorf("liker %d: %d, %v; want 200 or 503", u, a.status, err)
						}
					}
				})
			}
			wg.Go(func() {
				defer close(likes)
				for u := range likers {
					for range 3 { // the same user three times in a row: in flight together
						likes <- u
					}
				}
			})
			histories := make([][]answer, togglers)
			for u := range togglers {
				wg.Go(func() {
					for i := 0; ; i++ { // like, unlike, like, ... until the first failure
						a, err := w.send(client, post, change{user: "toggler-" + strconv.Itoa(u), unlike: i%2 == 1})
						if err != nil {
							t.Errorf("toggler %d: %v", u, err)
							return
						}
						histories[u] = append(histories[u], a)
						if a.status != 200 {
							return
						}
						ack()
					}
				})
			}
			wg.Wait()
			select {
			case <-killed:
			default:
				t.Fatalf("only %d changes acknowledged; the kill never happened", acked.Load())
			}
			be.restart()
			poll.Until(t, 30*time.Second, "writer ready after the restart", func() bool {
				return w.do(t, "GET", "/readyz").Status == 200
			})

			ctx := context.Background()
			stored := func(user string) bool { return w.RDB.Exists(ctx, keys.User(post, user)).Val() == 1 }
			for u := range likers {
				if likedOK[u].Load() && !stored("liker-"+strconv.Itoa(u)) {
					t.Errorf("liker %d was answered 200 but its like is not stored", u)
				}
			}
			failedAfterKill := 0
			for u, h := range histories {
				checkToggler(t, u, h, stored("toggler-"+strconv.Itoa(u)))
				if len(h) > 0 && h[len(h)-1].status != 200 {
					failedAfterKill++
				}
			}
			if failedAfterKill == 0 {
				t.Fatal("no request failed: Redis was not killed under load")
			}
			if n, keys := w.count(t, post), w.dedupKeys(t, post); n != int64(keys) {
				t.Errorf("count %d with %d dedup keys: a batch was stored in part", n, keys)
			}
			t.Logf("%d acknowledged before the kill; %d togglers' last request failed", acked.Load(), failedAfterKill)
		})
	}
}

// checkToggler checks the stored state of a user whose requests went one at a time: the last
// request's if it was acknowledged, else the state before or after it.
func checkToggler(t *testing.T, u int, h []answer, stored bool) {
	t.Helper()
	if len(h) == 0 {
		t.Fatalf("toggler %d sent nothing", u)
	}
	last := h[len(h)-1]
	after := !last.unlike
	if last.status == 200 {
		if stored != after {
			t.Errorf("toggler %d: last request %+v answered 200 but stored state is liked=%v", u, last.change, stored)
		}
		return
	}
	before := len(h) >= 2 && !h[len(h)-2].unlike
	if stored != before && stored != after {
		t.Errorf("toggler %d: stored liked=%v; want %v (before the failed request) or %v", u, stored, before, after)
	}
}
