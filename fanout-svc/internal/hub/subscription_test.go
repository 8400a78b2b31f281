package hub

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// gatedSubscriber is a Subscriber whose calls for chosen posts block, as Redis can: Subscribe
// until its gate opens (or its ctx ends), Unsubscribe until its gate opens or 3 s pass. It logs
// every post of every call in order, so tests can check what reached "Redis" when.
type gatedSubscriber struct {
	mu          sync.Mutex
	log         []string
	inFlight    int // Subscribe calls not yet returned
	maxInFlight int
	subGate     map[string]chan struct{}
	unsubGate   map[string]chan struct{}
	unsubbing   map[string]bool // an Unsubscribe is blocked right now
}

func newGatedSubscriber() *gatedSubscriber {
	return &gatedSubscriber{subGate: map[string]chan struct{}{}, unsubGate: map[string]chan struct{}{}, unsubbing: map[string]bool{}}
}

func (g *gatedSubscriber) gateSubscribe(post string) (open func()) { return g.gate(g.subGate, post) }
func (g *gatedSubscriber) gateUnsubscribe(post string) (open func()) {
	return g.gate(g.unsubGate, post)
}

func (g *gatedSubscriber) gate(gates map[string]chan struct{}, post string) (open func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	gates[post] = ch
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (g *gatedSubscriber) Subscribe(ctx context.Context, post string) error {
	g.mu.Lock()
	g.log = append(g.log, "sub "+post)
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	gate := g.subGate[post]
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedSubscriber) Unsubscribe(held []string) {
	g.mu.Lock()
	var gate chan struct{}
	for _, post := range held {
		g.log = append(g.log, "unsub "+post)
		if c := g.unsubGate[post]; c != nil {
			gate = c
			g.unsubbing[post] = true
		}
	}
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(3 * time.Second):
		}
	}
	g.mu.Lock()
	for _, post := range held {
		g.unsubbing[post] = false
		g.log = append(g.log, "unsub-done "+post)
	}
	g.mu.Unlock()
}

func (g *gatedSubscriber) blocked(post string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unsubbing[post]
}

func (g *gatedSubscriber) calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.log...)
}

func (g *gatedSubscriber) peakInFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.maxInFlight
}

func newGatedHub(t *testing.T, cfg Config) (*Hub, *gatedSubscriber) {
	t.Helper()
	sub := newGatedSubscriber()
	return startHub(t, cfg, posts.Config{}, sub), sub
}

// refs returns the references the hub holds on post id (viewers and viewers in setup).
func refs(h *Hub, id string) int {
	n := 0
	h.posts.LocalViewers(func(post string, viewers int) {
		if post == id {
			n = viewers
		}
	})
	return n
}

// connect adds a viewer of acquired posts and returns a reader of its stream.
func connect(t *testing.T, h *Hub, held []*posts.Post) *reader {
	r, _ := connectConn(t, h, held)
	return r
}

// connectConn is connect that also returns the client's end of the connection.
func connectConn(t *testing.T, h *Hub, held []*posts.Post) (*reader, net.Conn) {
	t.Helper()
	if !h.Reserve(0) {
		t.Fatal("reserve refused")
	}
	snap := make([]update.Update, len(held))
	for i, p := range held {
		snap[i] = update.Update{PostID: p.ID()}
	}
	server, client := tcpPair(t)
	if err := h.Add(Viewer{Conn: server, Posts: held, Snapshot: snap, Multi: len(held) > 1, Preamble: []byte(testPreamble)}); err != nil {
		t.Fatal(err)
	}
	return startReader(t, client), client
}

// TestSubscriptionOutlivesFirstViewer: the first viewer of a post leaves while Redis has not yet
// confirmed the subscription; the viewers that arrived meanwhile still get it.
func TestSubscriptionOutlivesFirstViewer(t *testing.T) {
	h, sub := newGatedHub(t, Config{})
	open := sub.gateSubscribe("hot")
	defer open()
	firstCtx, leave := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { // exits when Acquire returns
		_, err := h.posts.Acquire(firstCtx, []string{"hot"})
		firstErr <- err
	}()
	poll.Until(t, 10*time.Second, "the first viewer's subscribe to reach Redis", func() bool { return len(sub.calls()) == 1 })
	const others = 20
	results := make(chan error, others)
	acquired := make(chan []*posts.Post, others)
	for range others {
		go func() { // exits when Acquire returns
			held, err := h.posts.Acquire(context.Background(), []string{"hot"})
			results <- err
			if err == nil {
				acquired <- held
			}
		}()
	}
	poll.Until(t, 10*time.Second, "every viewer to wait on the subscription", func() bool { return refs(h, "hot") == others+1 })
	leave()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the first viewer's Acquire returned %v; want context.Canceled (it gives up on its own)", err)
	}
	open()
	for range others {
		if err := <-results; err != nil {
			t.Fatalf("a waiting viewer failed with %v after the first one left; want the subscription", err)
		}
	}
	var readers []*reader
	for range others {
		readers = append(readers, connect(t, h, <-acquired))
	}
	h.Publish(upd("hot", 1))
	for _, r := range readers {
		poll.Until(t, 10*time.Second, "count 1 at every viewer", func() bool { u, _ := r.last("hot"); return u.Count == 1 })
	}
	if got := sub.calls(); len(got) != 1 {
		t.Errorf("Redis calls %v; want one subscribe", got)
	}
}

// TestMultiPostStreamSubscribesConcurrently: a stream of several new posts waits about one
// confirmation, not one per post in a row.
func TestMultiPostStreamSubscribesConcurrently(t *testing.T) {
	h, sub := newGatedHub(t, Config{})
	ids := []string{"m1", "m2", "m3", "m4"}
	var opens []func()
	for _, id := range ids {
		opens = append(opens, sub.gateSubscribe(id))
	}
	done := make(chan error, 1)
	go func() { // exits when Acquire returns
		_, err := h.posts.Acquire(context.Background(), ids)
		done <- err
	}()
	deadline := time.Now().Add(2 * time.Second)
	for sub.peakInFlight() < len(ids) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	for _, o := range opens {
		o()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := sub.peakInFlight(); got != len(ids) {
		t.Errorf("%d subscriptions in flight at once; want all %d", got, len(ids))
	}
}

// TestBlockedUnsubscribeStallsNothingElse: while Redis takes 3 s to answer one post's UNSUBSCRIBE,
// updates of other posts keep reaching viewers, new viewers of other posts connect, viewers
// disconnect; a new viewer of that same post subscribes only after the UNSUBSCRIBE returned.
func TestBlockedUnsubscribeStallsNothingElse(t *testing.T) {
	h, sub := newGatedHub(t, Config{})
	open := sub.gateUnsubscribe("slow")
	defer open()
	busy, err := h.posts.Acquire(context.Background(), []string{"busy"})
	if err != nil {
		t.Fatal(err)
	}
	watcher := connect(t, h, busy)
	_, leaver := connectConn(t, h, busy)
	slow, err := h.posts.Acquire(context.Background(), []string{"slow"})
	if err != nil {
		t.Fatal(err)
	}
	h.posts.Release(slow) // its last viewer left: UNSUBSCRIBE after the grace period
	poll.Until(t, 10*time.Second, "the UNSUBSCRIBE to block", func() bool { return sub.blocked("slow") })

	h.Publish(upd("busy", 1))
	poll.Until(t, 10*time.Second, "an update of another post", func() bool { u, _ := watcher.last("busy"); return u.Count == 1 })
	more, err := h.posts.Acquire(context.Background(), []string{"busy", "fresh"})
	if err != nil {
		t.Fatal(err)
	}
	newcomer := connect(t, h, more)
	h.Publish(upd("fresh", 2))
	poll.Until(t, 10*time.Second, "a new viewer of other posts", func() bool { u, _ := newcomer.last("fresh"); return u.Count == 2 })
	poll.Until(t, 10*time.Second, "three viewers", func() bool { return h.Stats().Viewers.Load() == 3 })
	leaver.Close()
	poll.Until(t, 10*time.Second, "a disconnect", func() bool { return h.Stats().Viewers.Load() == 2 })
	if !sub.blocked("slow") {
		t.Fatal("the UNSUBSCRIBE returned (3 s passed) before the other posts' work was done: it waited on it")
	}

	back := make(chan error, 1)
	go func() { // exits when Acquire returns
		_, err := h.posts.Acquire(context.Background(), []string{"slow"})
		back <- err
	}()
	poll.Until(t, 10*time.Second, "the returning viewer to be counted", func() bool { return refs(h, "slow") == 1 })
	open()
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range sub.calls() {
		if strings.HasSuffix(c, " slow") {
			order = append(order, c)
		}
	}
	if want := "sub slow,unsub slow,unsub-done slow,sub slow"; strings.Join(order, ",") != want {
		t.Errorf("Redis saw %v; want %s (a new subscription after the pending UNSUBSCRIBE)", order, want)
	}
}

// TestHubEnforcesMaxPosts: a viewer's dirty bits are one uint64, so the hub itself refuses a
// stream of more than MaxPosts posts, in Acquire and in Add.
func TestHubEnforcesMaxPosts(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	ids := make([]string, MaxPosts+1)
	for i := range ids {
		ids[i] = "p" + string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	if _, err := h.posts.Acquire(context.Background(), ids); err == nil {
		t.Errorf("Acquire of %d posts succeeded; want an error", len(ids))
	}
	first, err := h.posts.Acquire(context.Background(), ids[:MaxPosts])
	if err != nil {
		t.Fatal(err)
	}
	last, err := h.posts.Acquire(context.Background(), ids[MaxPosts:])
	if err != nil {
		t.Fatal(err)
	}
	if !h.Reserve(1) {
		t.Fatal("reserve refused")
	}
	server, client := tcpPair(t)
	r := startReader(t, client)
	err = h.Add(Viewer{Conn: server, Posts: append(first, last...), Snapshot: make([]update.Update, len(ids))})
	if err == nil {
		t.Errorf("Add of %d posts succeeded; want an error", len(ids))
	}
	poll.Until(t, 10*time.Second, "the refused connection closed", func() bool { _, _, _, eof := r.snapshot(); return eof })
	if !h.Reserve(1) {
		t.Error("the refused viewer still holds its admission")
	}
	poll.Until(t, 10*time.Second, "the refused viewer's posts released", func() bool { return h.posts.Subscriptions() == 0 })
}

// TestAdmissionIsNotTheViewersGauge: a viewer in setup holds an admission but is not counted as
// connected until a loop has it.
func TestAdmissionIsNotTheViewersGauge(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	if !h.Reserve(1) {
		t.Fatal("reserve refused")
	}
	if got := h.Stats().Viewers.Load(); got != 0 {
		t.Errorf("viewers = %d with one viewer in setup; want 0", got)
	}
	if h.Reserve(1) {
		t.Error("a second admission past the limit of 1 succeeded")
	}
	held, err := h.posts.Acquire(context.Background(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	server, client := tcpPair(t)
	r := startReader(t, client)
	if err := h.Add(Viewer{Conn: server, Posts: held, Snapshot: []update.Update{{PostID: "a"}}, Preamble: []byte(testPreamble)}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the viewer counted once connected", func() bool { return h.Stats().Viewers.Load() == 1 })
	client.Close()
	poll.Until(t, 10*time.Second, "the viewer gone", func() bool { _, _, _, eof := r.snapshot(); return eof && h.Stats().Viewers.Load() == 0 })
	poll.Until(t, 10*time.Second, "its admission returned", func() bool {
		if !h.Reserve(1) {
			return false
		}
		h.Unreserve()
		return true
	})
}

// TestFramesReachAPostOnlyWhileItsSubscriptionIsLive: a message still arriving on a post's old
// subscription while it leaves, or while its successor subscribes, never lands in the new
// subscription's state; and a resync read before the new subscription that lands after it does not
// make the post known, so the next viewer still reads a snapshot and starts from the true count.
func TestFramesReachAPostOnlyWhileItsSubscriptionIsLive(t *testing.T) {
	h, sub := newGatedHub(t, Config{})
	first, err := h.posts.Acquire(context.Background(), []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	h.Prime(upd("p", 5))
	if !first[0].Known() {
		t.Fatal("a primed post is not known")
	}
	openUnsub := sub.gateUnsubscribe("p")
	defer openUnsub()
	h.posts.Release(first)
	poll.Until(t, 10*time.Second, "the UNSUBSCRIBE in flight", func() bool { return sub.blocked("p") })
	h.Publish(upd("p", 7)) // still in flight on the old subscription

	openSub := sub.gateSubscribe("p")
	defer openSub()
	got := make(chan []*posts.Post, 1)
	go func() { // exits when Acquire returns
		held, err := h.posts.Acquire(context.Background(), []string{"p"})
		if err != nil {
			t.Error(err)
		}
		got <- held
	}()
	poll.Until(t, 10*time.Second, "a successor waiting", func() bool { return refs(h, "p") == 1 })
	h.Publish(upd("p", 8))
	openUnsub()
	poll.Until(t, 10*time.Second, "the second SUBSCRIBE", func() bool {
		n := 0
		for _, c := range sub.calls() {
			if c == "sub p" {
				n++
			}
		}
		return n == 2
	})
	h.Publish(upd("p", 9)) // not yet confirmed: not this subscription's
	openSub()
	second := <-got
	p := second[0]
	if p == first[0] {
		t.Fatal("the returning viewer got the leaving post back; want a new subscription")
	}
	if f := p.Latest(); f != nil {
		t.Errorf("the new subscription's state is count %d from an earlier one; want none", f.Update.Count)
	}
	h.Publish(upd("p", 9)) // a resync read before the new subscription, landing after it
	if p.Known() {
		t.Fatal("the post is known from a frame that may predate its subscription; the next viewer would skip its snapshot")
	}
	h.Prime(upd("p", 12)) // the next viewer's snapshot
	h.Publish(upd("p", 10))
	r := connect(t, h, second)
	poll.Until(t, 10*time.Second, "the viewer's first frame", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 1 })
	if u, _ := r.last("p"); u.Count != 12 {
		t.Errorf("the viewer started from count %d; want the snapshot's 12", u.Count)
	}
}
