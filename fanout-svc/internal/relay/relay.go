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
		resyncPending: make(map[string]struct{}),
		resyncSignal:  make(chan struct{}, 1),
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		r.bus = newClusterBus(r, cc)
	} else {
		r.bus = newSingleBus(r, client)
	}
	return r
}

// Stats returns the relay's counters.
func (r *Relay) Stats() *Stats { return &r.stats }

// Healthy reports whether the pub/sub connections answered recently.
func (r *Relay) Healthy() bool { return r.bus.healthy() }

// Subscribe subscribes to the post's channel and returns once Redis confirmed it.
func (r *Relay) Subscribe(ctx context.Context, postID string) error {
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
func (r *Relay) Unsubscribe(postIDs []string) {
	chs := make([]string, len(postIDs))
	for i, id := range postIDs {
		chs[i] = r.keys.Channel(id)
	}
	r.unsubscribe(chs)
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
	wg.Add(1)
	go func() { // exits when ctx is done
		defer wg.Done()
		r.resyncLoop(ctx)
	}()
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
