package relay

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// receiver reads one go-redis PubSub with ReceiveTimeout, never PubSub.Channel(), so a message is
// handed on as soon as it is read and a slow consumer can never make go-redis drop or stall.
type receiver struct {
	ps  *redis.PubSub
	up  atomic.Bool // the connection delivered something since the last failure
	log *zap.Logger
}

// loop reads until ctx is done. Each message goes to handle. An idle connection is pinged, so a
// dead one fails and go-redis reconnects and resubscribes. A read error goes to failed, which
// reports whether it was a reply to act on (a cluster redirection) rather than a broken
// connection; a broken connection is retried with backoff. failed may be nil.
func (rc *receiver) loop(ctx context.Context, stats *Stats, handle func(any), failed func(error) bool) {
	// A read blocks for up to its timeout whatever ctx says; closing the PubSub ends it at once,
	// so that a node shuts down without waiting out an idle read.
	stop := context.AfterFunc(ctx, func() { _ = rc.ps.Close() })
	defer stop()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		msg, err := rc.ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if isTimeout(err) {
				_ = rc.ps.Ping(ctx) // a dead connection fails here and go-redis reconnects
				continue
			}
			stats.RedisErrors.Add(1)
			if failed != nil && failed(err) {
				continue
			}
			rc.up.Store(false)
			backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
			rc.log.Debug("pubsub receive", zap.Error(err), zap.Duration("backoff", backoff))
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		rc.up.Store(true)
		handle(msg)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
