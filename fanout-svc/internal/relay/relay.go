package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
)

// Sink receives updates: the node hands them to its hub. Publish must not block.
type Sink interface {
	Publish(u update.Update)
}

// Stats are the relay's counters for /metrics.
type Stats struct {
	Messages    atomic.Int64 // pub/sub messages received
	Malformed   atomic.Int64 // messages that were not updates
	RedisErrors atomic.Int64 // receive, subscribe and snapshot errors
	Resyncs     atomic.Int64 // posts re-read after a resubscription
	Reconnects  atomic.Int64 // resubscriptions observed after a connection loss or a slot move
	Reroutes    atomic.Int64 // cluster: slots whose subscriptions moved to another node
	Created     atomic.Int64 // creations of posts heard on the creations channel, any post's
	Activated   atomic.Int64 // waiting posts subscribed once they came to exist
}

// bus is the part of the relay that differs between one Redis server (SUBSCRIBE on one
// connection) and a Redis Cluster (SSUBSCRIBE on one connection per master node). Both report
// what they receive to Relay.handle, so confirmation and resynchronisation work the same way.
type bus interface {
	// subscribe sends the subscription for ch; Redis confirms it through Relay.handle.
	subscribe(ctx context.Context, ch string) error
	// unsubscribe drops channels.
	unsubscribe(ctx context.Context, chs []string)
	// run receives until ctx is done and closes the bus's connections before it returns.
	run(ctx context.Context)
	// healthy reports whether every pub/sub connection answered recently.
	healthy() bool
}

// Relay subscribes the node to post channels: over one pub/sub connection on a single Redis
// server, or with sharded pub/sub over one connection per master node on a Redis Cluster.
type Relay struct {
	client redis.UniversalClient
	keys   rediskeys.Scheme
	log    *zap.Logger
	bus    bus
	stats  Stats
	sink   Sink

	mu        sync.Mutex
	waiters   map[string][]chan struct{} // channel -> subscribers awaiting confirmation
	confirmed map[string]bool            // channels confirmed at least once
	absent    map[string]*absentPost     // posts viewers wait on that do not exist yet (created.go)

	created      *receiver     // Cluster: the classic subscription to the creations channel, on any node (one Redis: on the bus's connection)
	creations    creations     // waiting posts to subscribe or re-read
	recheckEvery time.Duration // re-read every waiting post this often; 0: only after a reconnect

	resyncMu      sync.Mutex
	resyncPending map[string]struct{}
	resyncSignal  chan struct{}
}

// New returns a relay that hands every update it receives to sink; Run must be running for
// subscriptions to be confirmed. A *redis.ClusterClient selects sharded pub/sub (SSUBSCRIBE), any
// other client classic SUBSCRIBE.
func New(client redis.UniversalClient, keys rediskeys.Scheme, sink Sink, log *zap.Logger) *Relay {
	r := &Relay{
		client:        client,
		keys:          keys,
		sink:          sink,
		log:           log,
		waiters:       make(map[string][]chan struct{}),
		confirmed:     make(map[string]bool),
		absent:        make(map[string]*absentPost),
		creations:     newCreations(),
		resyncPending: make(map[string]struct{}),
		resyncSignal:  make(chan struct{}, 1),
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		// The creations channel is classic pub/sub on a Cluster too: a PUBLISH reaches every
		// node's subscribers, so any node will do, on a connection of its own (the bus's are
		// sharded, per master). go-redis subscribes it again after each reconnect. On one Redis
		// the bus's one connection carries it (singleBus), so a node holds one pub/sub connection.
		r.created = &receiver{ps: client.Subscribe(context.Background()), log: log}
		r.bus = newClusterBus(r, cc)
		r.recheckEvery = clusterRecheck
	} else {
		r.bus = newSingleBus(r, client)
	}
	return r
}

// Stats returns the relay's counters.
func (r *Relay) Stats() *Stats { return &r.stats }

// Healthy reports whether the pub/sub connections answered recently.
func (r *Relay) Healthy() bool { return r.bus.healthy() && (r.created == nil || r.created.up.Load()) }

// Subscribe subscribes to the post's channel and returns once Redis confirmed it. A post that does
// not exist yet (no version) gets no channel: Subscribe returns at once and the relay subscribes
// it when it hears of its creation, then re-reads it, so that every change from the first on
// reaches the sink all the same (created.go).
func (r *Relay) Subscribe(ctx context.Context, postID string) error {
	waits, err := r.waitIfAbsent(ctx, postID)
	if err != nil || waits {
		return err
	}
	return r.subscribeChannel(ctx, postID)
}

// subscribeChannel subscribes to the post's channel and returns once Redis confirmed it.
func (r *Relay) subscribeChannel(ctx context.Context, postID string) error {
	ch := r.keys.Channel(postID)
	w := make(chan struct{})
	r.mu.Lock()
	r.waiters[ch] = append(r.waiters[ch], w)
	r.mu.Unlock()
	err := r.bus.subscribe(ctx, ch)
	if err == nil {
		select {
		case <-w:
			return nil
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	r.stats.RedisErrors.Add(1)
	r.dropWaiter(ch, w)
	r.unsubscribe([]string{ch}) // go-redis remembers the channel even when the subscription failed
	return err
}

// Unsubscribe drops the posts' channels, in one command where the bus can (the registry of posts
// hands over hundreds at once when many posts go idle together), within 2 s however Redis is doing.
// A post still waiting to exist has no channel: it is only forgotten.
func (r *Relay) Unsubscribe(postIDs []string) {
	chs := make([]string, 0, len(postIDs))
	for _, id := range postIDs {
		if !r.forget(id) {
			chs = append(chs, r.keys.Channel(id))
		}
	}
	if len(chs) > 0 {
		r.unsubscribe(chs)
	}
}

func (r *Relay) unsubscribe(chs []string) {
	r.mu.Lock()
	for _, ch := range chs {
		delete(r.confirmed, ch)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.bus.unsubscribe(ctx, chs)
}

func (r *Relay) dropWaiter(ch string, w chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[ch]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, ch)
	} else {
		r.waiters[ch] = ws
	}
}

// Run reads the pub/sub connections and hands updates to the sink until ctx is done. go-redis
// reconnects after an error (and the cluster bus also follows slots that move); whenever a
// channel is confirmed again, Run re-reads that post so viewers converge without reconnecting.
// Errors are counted in Stats and retried, never returned: Run ends only with ctx.
func (r *Relay) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // exits when ctx is done
		defer wg.Done()
		r.resyncLoop(ctx)
	}()
	go func() { // exits when ctx is done
		defer wg.Done()
		r.activateLoop(ctx)
	}()
	if r.created != nil {
		wg.Add(1)
		go func() { // exits when ctx is done, closing the subscription
			defer wg.Done()
			defer r.created.ps.Close()
			r.subscribeCreated(ctx, r.created.ps)
			r.created.loop(ctx, &r.stats, r.handleCreated, nil)
		}()
	}
	r.bus.run(ctx)
	wg.Wait()
}

// handle takes one message from a pub/sub connection. It never blocks: the sink's Publish only
// records the newest frame of the post.
func (r *Relay) handle(msg any) {
	switch m := msg.(type) {
	case *redis.Message:
		r.stats.Messages.Add(1)
		u, err := update.Parse([]byte(m.Payload))
		if err != nil {
			r.stats.Malformed.Add(1)
			return
		}
		r.sink.Publish(u)
	case *redis.Subscription:
		if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
			r.confirm(m.Channel)
		}
	}
}

// confirm wakes the subscribers waiting for ch. A confirmation nobody waits for, of a channel
// confirmed before, is a resubscription (after a reconnect or a slot move): updates may have
// been missed.
func (r *Relay) confirm(ch string) {
	r.mu.Lock()
	ws := r.waiters[ch]
	delete(r.waiters, ch)
	again := r.confirmed[ch] && len(ws) == 0
	r.confirmed[ch] = true
	r.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	if again {
		if post, ok := r.keys.PostFromChannel(ch); ok {
			r.stats.Reconnects.Add(1)
			r.queueResync(post)
		}
	}
}
