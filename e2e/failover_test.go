package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// The failover load: failoverClients clients like failoverPosts posts, each client once per
// failoverPace as a fresh user every time, at most failoverPerClient times (about 800 likes a
// second, bounded to 20 s). failoverViewers viewers watch each post on each fanout node.
const (
	failoverPosts     = 10
	failoverClients   = 16
	failoverPace      = 20 * time.Millisecond
	failoverPerClient = 1000
	failoverViewers   = 3
	// failoverRecovery bounds the time from the fault to the first acknowledged like sent after
	// it: Sentinel notices in 1.5 s (redistest's down-after-milliseconds, as shipped) and promotes a replica.
	failoverRecovery = 10 * time.Second
)

// failoverDataNode is what every data node of the failover topology runs with: a primary that
// no replica has acknowledged for 2 s refuses writes, so a primary cut off from its replicas
// and Sentinels stops taking likes that the new primary will never have.
var failoverDataNode = []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "2"}

// TestFailover is the Sentinel failover test, on processes: a primary, two replicas and three
// Sentinels; one writer and two fanout nodes finding the primary through Sentinel; 16 clients
// liking 10 posts as fresh users while 60 viewers watch. Mid-load the primary is killed (kill -9)
// or cut off (SIGSTOP, and SIGCONT once a replica is promoted). Then every like acknowledged
// with REDIS_ACK_REPLICAS=1 is on the new primary, each post's count lies between its
// acknowledged likes and acknowledged + failed and equals its dedup keys, likes are acknowledged
// again within 10 s, no viewer was shed and every viewer converges on the new primary's counts.
// With REDIS_ACK_REPLICAS=0 the test reports the acknowledged likes the kill lost.
func TestFailover(t *testing.T) {
	for _, tt := range []struct {
		name  string
		acks  int
		fault primaryFault
	}{
		{"kill-9", 1, killPrimary},
		{"cut-off", 1, cutOffPrimary},
		{"kill-9-ack-0", 0, killPrimary},
	} {
		t.Run(tt.name, func(t *testing.T) { runFailover(t, tt.acks, tt.fault) })
	}
}

// A primaryFault takes the current primary away and returns it, and a heal to call once likes
// are acknowledged again (by the promoted primary, which it is given).
type primaryFault func(t *testing.T, s *redistest.Sentinel) (old *redistest.Server, heal func(promoted *redistest.Server))

func killPrimary(t *testing.T, s *redistest.Sentinel) (*redistest.Server, func(*redistest.Server)) {
	return s.KillPrimary(), func(*redistest.Server) {}
}

// cutOffPrimary freezes the primary (SIGSTOP): alive and holding its connections but answering
// no one, as a primary cut off from the network. Its heal thaws it while likes still flow: it
// must refuse writes (min-replicas-to-write: its replicas left it) until the Sentinels make it a
// replica of the promoted primary, which it must become.
func cutOffPrimary(t *testing.T, s *redistest.Sentinel) (*redistest.Server, func(*redistest.Server)) {
	old := s.Primary()
	old.Signal(syscall.SIGSTOP)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			old.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	return old, func(promoted *redistest.Server) {
		thaw()
		thawedAt := time.Now()
		if _, err := old.Do("PING"); err != nil {
			t.Fatalf("thawed primary: PING: %v", err)
		}
		_, err := old.Do("SET", "failover-probe", "1")
		if err == nil || !strings.HasPrefix(err.Error(), "NOREPLICAS") && !strings.HasPrefix(err.Error(), "READONLY") {
			t.Errorf("write to the thawed primary: %v; want NOREPLICAS (min-replicas-to-write) or READONLY", err)
		}
		poll.Check(t, 30*time.Second, func() error { return replicates(old, promoted) })
		t.Logf("thawed primary refused a write (%v) and replicates the new primary %.2f s after the thaw",
			err, time.Since(thawedAt).Seconds())
	}
}

// replicates checks with ROLE that n is a replica of primary with its link connected.
func replicates(n, primary *redistest.Server) error {
	res, err := n.Do("ROLE")
	role, _ := res.([]any)
	if err != nil {
		return fmt.Errorf("ROLE of %s: %w", n.Addr, err)
	}
	if len(role) < 4 {
		return fmt.Errorf("ROLE of %s: %v", n.Addr, res)
	}
	addr := fmt.Sprint(role[1], ":", role[2])
	if role[0] != "slave" || addr != primary.Addr || role[3] != "connected" {
		return fmt.Errorf("ROLE of %s: %v; want slave of %s, connected", n.Addr, role, primary.Addr)
	}
	return nil
}

func runFailover(t *testing.T, acks int, fault primaryFault) {
	st := startFailoverStack(t, acks)
	gauge := watchViewerGauge(st.nodes, failoverPosts*failoverViewers)
	defer gauge.Stop()
	load := startLikeLoad(st.writer.URL, st.posts)
	defer load.Stop()
	poll.Until(t, 10*time.Second, "500 likes acknowledged before the fault", func() bool {
		return load.acked(time.Time{}) >= 500
	})

	// The fault is done when fault returns (the process killed and reaped, or sent SIGSTOP): a
	// like sent before that may still be acknowledged by the old primary.
	old, heal := fault(t, st.s)
	faultAt := time.Now()
	poll.Until(t, failoverRecovery-time.Since(faultAt), "a like sent after the fault acknowledged", func() bool {
		return load.acked(faultAt) > 0
	})
	promoted := st.s.WaitPromoted(old)
	heal(promoted)
	poll.Until(t, 10*time.Second, "5 likes of every post acknowledged after the fault", func() bool {
		return load.everyPostAcked(faultAt, 5)
	})
	tally := checkAnswers(t, acks, load.Stop(), faultAt)
	counts := checkStored(t, promoted, st.posts, tally, acks > 0)
	checkWriterReads(t, st.writer, tally, counts)
	for _, post := range st.posts {
		WaitCount(t, 10*time.Second, post, counts[post], st.viewers[post]...)
	}
	checkViewersKept(t, st, gauge)
}

// checkAnswers tallies the load's answers, logs the figures of the run and checks that likes
// were acknowledged again within failoverRecovery of the fault and that every answer was an
// acknowledgement, a 503 or a transport error.
func checkAnswers(t *testing.T, acks int, answers []likeAnswer, faultAt time.Time) likeTally {
	t.Helper()
	tally := tallyLikes(answers, faultAt)
	recovered := tally.firstAfter.Sub(faultAt)
	t.Logf("REDIS_ACK_REPLICAS=%d: %d likes acknowledged, %d failed (%d answered 503, %d transport errors; "+
		"the slowest in %.2f s); %.2f s without acknowledgements (last one %.2f s before the fault, first one %.2f s after it)",
		acks, tally.acked, tally.failed, tally.unavailable, tally.transport, tally.slowestFailure.Seconds(),
		tally.gap().Seconds(), faultAt.Sub(tally.lastBefore).Seconds(), recovered.Seconds())
	if recovered > failoverRecovery {
		t.Errorf("first like acknowledged %v after the fault; want within %v", recovered, failoverRecovery)
	}
	for _, bad := range tally.odd {
		t.Errorf("answer %s; want 200 liked, 503 or a transport error", bad)
	}
	return tally
}

// failoverStack is the topology of TestFailover, through Sentinel: one writer, two fanout nodes
// and the viewers of every post on both nodes.
type failoverStack struct {
	s       *redistest.Sentinel
	writer  *Proc
	nodes   []*Proc
	posts   []string
	viewers map[string][]*Viewer // post -> its viewers on every node
}

func startFailoverStack(t *testing.T, acks int) *failoverStack {
	t.Helper()
	s := redistest.StartSentinel(t, 2, failoverDataNode...)
	env := []string{"REDIS_SENTINEL_ADDRS=" + s.AddrList(), "REDIS_SENTINEL_MASTER=" + s.Master}
	st := &failoverStack{s: s, viewers: map[string][]*Viewer{},
		writer: StartWriter(t, s.Primary().URL, append(env, "REDIS_ACK_REPLICAS="+strconv.Itoa(acks))...),
		nodes:  []*Proc{StartFanout(t, s.Primary().URL, env...), StartFanout(t, s.Primary().URL, env...)}}
	for i := range failoverPosts {
		post := "fo" + strconv.Itoa(i)
		st.posts = append(st.posts, post)
		for _, n := range st.nodes {
			for range failoverViewers {
				st.viewers[post] = append(st.viewers[post], Watch(t, n.URL+"/sse/"+post))
			}
		}
	}
	for _, post := range st.posts {
		WaitCount(t, 10*time.Second, post, 0, st.viewers[post]...)
	}
	return st
}

// checkStored reads every post's count and dedup keys on the primary and checks them against
// the answers (see checkPost). It logs the acknowledged likes that are not there and returns the
// counts.
func checkStored(t *testing.T, primary *redistest.Server, posts []string, tally likeTally, mustKeep bool) map[string]int64 {
	t.Helper()
	c := primary.Client(t)
	counts := map[string]int64{}
	lost := 0
	for _, post := range posts {
		count, users := storedLikes(t, c, post)
		counts[post] = count
		lost += checkPost(t, post, count, users, tally.ackedUsers[post], tally.failedUsers[post], mustKeep)
	}
	t.Logf("%d acknowledged likes lost (not on the new primary %s)", lost, primary.Addr)
	return counts
}

// checkPost checks one post: its count equals its dedup keys, which are all users that were
// sent; the count is at most acknowledged + failed and, when likes were acknowledged only once a
// replica had them (mustKeep), the dedup keys include every acknowledged user, so the count is at
// least the acknowledged likes. It returns how many acknowledged users have no dedup key.
func checkPost(t *testing.T, post string, count int64, users, acked, failed map[string]bool, mustKeep bool) (lost int) {
	t.Helper()
	if count != int64(len(users)) {
		t.Errorf("post %s: count %d, %d dedup keys; want equal", post, count, len(users))
	}
	for u := range users {
		if !acked[u] && !failed[u] {
			t.Errorf("post %s: dedup key of %s, a user never sent", post, u)
		}
	}
	for u := range acked {
		if !users[u] {
			lost++
		}
	}
	if hi := int64(len(acked) + len(failed)); count > hi {
		t.Errorf("post %s: count %d; want at most %d, acknowledged + failed", post, count, hi)
	}
	if mustKeep && (lost > 0 || count < int64(len(acked))) {
		t.Errorf("post %s: count %d, %d of %d acknowledged likes missing on the new primary; want all there",
			post, count, lost, len(acked))
	}
	return lost
}

// storedLikes returns a post's count and the users of its dedup keys, read with c.
func storedLikes(t *testing.T, c *redis.Client, post string) (int64, map[string]bool) {
	t.Helper()
	keys := rediskeys.New("")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	count, err := c.Get(ctx, keys.Count(post)).Int64()
	if err != nil {
		t.Fatalf("count of %s: %v", post, err)
	}
	users := map[string]bool{}
	prefix := keys.User(post, "")
	iter := c.Scan(ctx, 0, keys.User(post, "*"), 1000).Iterator()
	for iter.Next(ctx) {
		users[strings.TrimPrefix(iter.Val(), prefix)] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("dedup keys of %s: %v", post, err)
	}
	return count, users
}

// checkWriterReads checks through the writer's read API that it reads the primary's counts, and
// that the like acknowledged last before the fault on each post reads back as liked: the likes
// most at risk of having reached no replica.
func checkWriterReads(t *testing.T, w *Proc, tally likeTally, counts map[string]int64) {
	t.Helper()
	var posts []string
	for p := range counts {
		posts = append(posts, p)
	}
	for _, r := range readLikes(t, w, posts, "") {
		if r.Count != counts[r.PostID] {
			t.Errorf("GET /counts: %s at %d; want %d, the primary's", r.PostID, r.Count, counts[r.PostID])
		}
	}
	for post, user := range tally.lastAckedBefore {
		if r := readLikes(t, w, []string{post}, user); len(r) != 1 || !r[0].Liked {
			t.Errorf("GET /likes?posts=%s as %s, acknowledged just before the fault: %+v; want liked", post, user, r)
		}
	}
}

// readPost is one post of a GET /likes or /counts reply.
type readPost struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	Liked  bool   `json:"liked"`
}

// readLikes asks the writer for posts: GET /likes as user, or GET /counts without one.
func readLikes(t *testing.T, w *Proc, posts []string, user string) []readPost {
	t.Helper()
	path := "/counts"
	if user != "" {
		path = "/likes"
	}
	status, body := doRequest(t, http.MethodGet, w.URL+path+"?posts="+strings.Join(posts, ","), user)
	var r struct{ Posts []readPost }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("GET %s: %d %s; want 200", path, status, body)
	}
	return r.Posts
}

// checkViewersKept checks that no node shed a viewer: each node's viewer gauge stayed at the
// viewers opened on it throughout, and no viewer's stream ended (each connected once).
func checkViewersKept(t *testing.T, st *failoverStack, gauge *viewerGauge) {
	t.Helper()
	samples, off := gauge.Stop()
	if off != "" {
		t.Errorf("viewer gauge: %s; want %d on every node throughout", off, failoverPosts*failoverViewers)
	}
	backwards := 0
	for post, vs := range st.viewers {
		for i, v := range vs {
			_, back, connects := v.Stats()
			backwards += back
			if connects != 1 {
				t.Errorf("viewer %d of %s connected %d times; want 1 (its stream never ended)", i, post, connects)
			}
		}
	}
	t.Logf("viewer gauge sampled %d times; %d updates older than one already seen, ignored by viewers", samples, backwards)
}

// viewerGauge samples likes_fanout_viewers of some nodes until stopped and keeps the first
// sample that was not want.
type viewerGauge struct {
	stop    context.CancelFunc
	done    chan struct{}
	samples int
	off     string
}

func watchViewerGauge(nodes []*Proc, want int) *viewerGauge {
	ctx, cancel := context.WithCancel(context.Background())
	g := &viewerGauge{stop: cancel, done: make(chan struct{})}
	start := time.Now()
	go func() { // exits when Stop cancels ctx
		defer close(g.done)
		for ctx.Err() == nil && g.off == "" {
			for _, n := range nodes {
				v, err := clienttest.ScrapeMetric(n.URL, "likes_fanout_viewers")
				if err != nil || v != float64(want) {
					g.off = fmt.Sprintf("%s at %v, %v after the start", n.Addr, v, time.Since(start).Round(time.Millisecond))
					if err != nil {
						g.off += ": " + err.Error()
					}
				}
			}
			g.samples++
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		<-ctx.Done()
	}()
	return g
}

// Stop ends the sampling and returns the samples taken and the first one that was off ("" if
// none). It may be called again.
func (g *viewerGauge) Stop() (int, string) {
	g.stop()
	<-g.done
	return g.samples, g.off
}

// likeAnswer is one like the load sent and how it was answered.
type likeAnswer struct {
	post, user string
	sent, at   time.Time // request sent, answer received
	status     int       // 0: a transport error
	liked      bool
	err        error
}

func (a likeAnswer) acked() bool { return a.status == http.StatusOK && a.liked && a.err == nil }

// likeLoad is failoverClients clients liking posts as fresh users, recording every answer.
type likeLoad struct {
	posts []string
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu      sync.Mutex
	answers []likeAnswer
}

func startLikeLoad(writerURL string, posts []string) *likeLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &likeLoad{posts: posts, stop: cancel}
	for c := range failoverClients {
		l.wg.Add(1)
		go func() { // exits after failoverPerClient likes or when Stop cancels ctx
			defer l.wg.Done()
			l.client(ctx, writerURL, posts, c)
		}()
	}
	return l
}

// client likes posts in turn, each time as a new user, once per failoverPace.
func (l *likeLoad) client(ctx context.Context, writerURL string, posts []string, c int) {
	tick := time.NewTicker(failoverPace)
	defer tick.Stop()
	for i := range failoverPerClient {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		a := likeAnswer{post: posts[(c+i)%len(posts)], user: fmt.Sprintf("c%d-%d", c, i), sent: time.Now()}
		var r clienttest.LikeReply
		a.status, r, a.err = clienttest.TryLike(writerURL, a.post, a.user)
		a.at, a.liked = time.Now(), r.Liked
		l.mu.Lock()
		l.answers = append(l.answers, a)
		l.mu.Unlock()
	}
}

// Stop stops the clients, waits for their last answers and returns every answer.
func (l *likeLoad) Stop() []likeAnswer {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answers
}

// acked counts the acknowledged likes sent after since.
func (l *likeLoad) acked(since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.answers {
		if a.acked() && a.sent.After(since) {
			n++
		}
	}
	return n
}

// everyPostAcked reports whether every post has at least n acknowledged likes sent after since.
func (l *likeLoad) everyPostAcked(since time.Time, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := map[string]int{}
	for _, a := range l.answers {
		if a.acked() && a.sent.After(since) {
			per[a.post]++
		}
	}
	for _, p := range l.posts {
		if per[p] < n {
			return false
		}
	}
	return true
}

// likeTally sums up the answers of a failover run.
type likeTally struct {
	ackedUsers, failedUsers map[string]map[string]bool // post -> users
	acked, failed           int
	unavailable, transport  int // failed with 503, failed without an answer
	slowestFailure          time.Duration
	odd                     []string // answers that are neither acknowledged nor failed as they may
	lastBefore, firstAfter  time.Time
	lastAckedBefore         map[string]string // post -> the user acknowledged last before the fault
}

// tallyLikes sorts the answers into acknowledged and failed per post and finds the last
// acknowledgement before the fault and the first of a like sent after it.
func tallyLikes(answers []likeAnswer, faultAt time.Time) likeTally {
	t := likeTally{ackedUsers: map[string]map[string]bool{}, failedUsers: map[string]map[string]bool{},
		lastAckedBefore: map[string]string{}}
	lastAt := map[string]time.Time{}
	for _, a := range answers {
		if t.ackedUsers[a.post] == nil {
			t.ackedUsers[a.post], t.failedUsers[a.post] = map[string]bool{}, map[string]bool{}
		}
		switch {
		case a.acked():
			t.acked++
			t.ackedUsers[a.post][a.user] = true
			t.noteAck(a, faultAt, lastAt)
		case a.err != nil && a.status == 0, a.status == http.StatusServiceUnavailable:
			t.failed++
			t.failedUsers[a.post][a.user] = true
			t.slowestFailure = max(t.slowestFailure, a.at.Sub(a.sent))
			if a.status == 0 {
				t.transport++
			} else {
				t.unavailable++
			}
		default:
			t.failed++ // counted as failed, so the bounds stay true, and reported
			t.failedUsers[a.post][a.user] = true
			t.odd = append(t.odd, fmt.Sprintf("%d liked=%v err=%v to %s on %s", a.status, a.liked, a.err, a.user, a.post))
		}
	}
	return t
}

// noteAck keeps the last acknowledgement before the fault (overall and per post) and the first
// of a like sent after it.
func (t *likeTally) noteAck(a likeAnswer, faultAt time.Time, lastAt map[string]time.Time) {
	if a.at.Before(faultAt) {
		t.lastBefore = later(t.lastBefore, a.at)
		if a.at.After(lastAt[a.post]) {
			lastAt[a.post], t.lastAckedBefore[a.post] = a.at, a.user
		}
	}
	if a.sent.After(faultAt) && (t.firstAfter.IsZero() || a.at.Before(t.firstAfter)) {
		t.firstAfter = a.at
	}
}

// gap is the time without acknowledgements around the fault.
func (t likeTally) gap() time.Duration { return t.firstAfter.Sub(t.lastBefore) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
