package relay

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/update"
)

// Sink receives updates; the hub implements it. Publish must not block.
type Sink interface {
	Publish(u update.Update)
}

// Stats are the relay's counters for /metrics.
type Stats struct {
	Messages    atomic.Int64 // pub/sub messages received
	Malformed   atomic.Int64 // messages that were not updates
	RedisErrors atomic.Int64 // receive, subscribe and snapshot errors
	Resyncs     atomic.Int64 // posts re-read after a resubscription
	Reconnects  atomic.Int64 // resubscriptions observed after a connection loss
}

// Relay subscribes the node to post channels over one pub/sub connection.
type Relay struct {
	client redis.UniversalClient
	keys   rediskeys.Scheme
	log    *zap.Logger
	ps     *redis.PubSub
	stats  Stats
	up     atomic.Bool
	sink   atomic.Pointer[sinkBox]

	mu        sync.Mutex
	waiters   map[string][]chan struct{} // channel -> subscribers awaiting confirmation
	confirmed map[string]bool            // channels confirmed at least once

	resyncMu      sync.Mutex
	resyncPending map[string]struct{}
	resyncSignal  chan struct{}
}

type sinkBox struct{ Sink }

// New returns a relay; Run must be running for subscriptions to be confirmed.
func New(client redis.UniversalClient, keys rediskeys.Scheme, log *zap.Logger) *Relay {
	return &Relay{
		client:        client,
		keys:          keys,
		log:           log,
		ps:            client.Subscribe(context.Background()),
		waiters:       make(map[string][]chan struct{}),
		confirmed:     make(map[string]bool),
		resyncPending: make(map[string]struct{}),
		resyncSignal:  make(chan struct{}, 1),
	}
}

// Stats returns the relay's counters.
func (r *Relay) Stats() *Stats { return &r.stats }

// Healthy reports whether the pub/sub connection answered recently.
func (r *Relay) Healthy() bool { return r.up.Load() }

// Subscribe subscribes to the post's channel and returns once Redis confirmed it.
func (r *Relay) Subscribe(ctx context.Context, postID string) error {
	ch := r.keys.Channel(postID)
	w := make(chan struct{})
	r.mu.Lock()
	r.waiters[ch] = append(r.waiters[ch], w)
	r.mu.Unlock()
	err := r.ps.Subscribe(ctx, ch)
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
	r.unsubscribe(ch) // go-redis remembers the channel even when SUBSCRIBE failed
	return err
}

// Unsubscribe drops the post's channel.
func (r *Relay) Unsubscribe(postID string) { r.unsubscribe(r.keys.Channel(postID)) }

func (r *Relay) unsubscribe(ch string) {
	r.mu.Lock()
	delete(r.confirmed, ch)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.ps.Unsubscribe(ctx, ch); err != nil {
		r.log.Debug("unsubscribe", zap.String("channel", ch), zap.Error(err))
	}
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

// Run reads the pub/sub connection and hands updates to sink until ctx is done. go-redis
// reconnects and resubscribes by itself after an error; Run backs off between failed reads and,
// when a channel is confirmed again, re-reads that post so viewers converge without reconnecting.
func (r *Relay) Run(ctx context.Context, sink Sink) error {
	r.sink.Store(&sinkBox{sink})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // exits when ctx is done
		defer wg.Done()
		r.resyncLoop(ctx)
	}()
	defer wg.Wait()
	defer r.ps.Close()

	backoff := time.Duration(0)
	for ctx.Err() == nil {
		msg, err := r.ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if isTimeout(err) {
				_ = r.ps.Ping(ctx) // a dead connection fails here and go-redis reconnects
				continue
			}
			r.up.Store(false)
			r.stats.RedisErrors.Add(1)
			backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
			r.log.Debug("pubsub receive", zap.Error(err), zap.Duration("backoff", backoff))
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		r.up.Store(true)
		r.handle(msg, sink)
	}
	return nil
}

func (r *Relay) handle(msg any, sink Sink) {
	switch m := msg.(type) {
	case *redis.Message:
		r.stats.Messages.Add(1)
		u, err := update.Parse([]byte(m.Payload))
		if err != nil {
			r.stats.Malformed.Add(1)
			return
		}
		sink.Publish(u)
	case *redis.Subscription:
		if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
			r.confirm(m.Channel)
		}
	}
}

// confirm wakes the subscribers waiting for ch. A confirmation nobody waits for, of a channel
// confirmed before, is go-redis resubscribing after a reconnect: updates may have been missed.
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

func (r *Relay) queueResync(post string) {
	r.resyncMu.Lock()
	r.resyncPending[post] = struct{}{}
	r.resyncMu.Unlock()
	select {
	case r.resyncSignal <- struct{}{}:
	default:
	}
}

// resyncLoop re-reads posts queued by confirm, in batches, and publishes their state to the sink
// (which drops anything not newer than what viewers have).
func (r *Relay) resyncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.resyncSignal:
		}
		r.resyncMu.Lock()
		posts := make([]string, 0, len(r.resyncPending))
		for p := range r.resyncPending {
			posts = append(posts, p)
		}
		clear(r.resyncPending)
		r.resyncMu.Unlock()
		for len(posts) > 0 {
			batch := posts[:min(len(posts), 200)]
			posts = posts[len(batch):]
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			states, err := r.Snapshot(sctx, batch)
			cancel()
			if err != nil {
				r.stats.RedisErrors.Add(1)
				for _, p := range append(batch, posts...) {
					r.queueResync(p) // try again after the next confirmation or signal
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
				break
			}
			sink := r.sink.Load()
			for _, u := range states {
				r.stats.Resyncs.Add(1)
				sink.Publish(u)
			}
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
