package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file holds the one call every batch makes to Redis: the like script, on the cluster client
// or, when replicas must confirm it, on the primary's node client followed by WAIT (ack.go).

// run runs the script for one batch (with WAIT when replicas must confirm it), again while its
// slot is moving (redirect.go). The error returned is the last
// attempt's. On the acknowledged path it resolves the node to send to once per redirection: the
// key's master, the node a MOVED or ASK named, and after a TRYAGAIN from a node it was ASKed to,
// that node again (it imports the slot and will serve it first).
func (s *Store) run(ctx context.Context, keys []string, args []any, cutoff time.Time, acks int) ([]any, error) {
	var to redirect
	var node *redis.Client // the acknowledged path's node for to; nil: resolve it
	redirected := false    // the attempt before this one was redirected without a pause
	for attempt := 0; ; attempt++ {
		var reply []any
		var err error
		if acks > 0 {
			if node == nil {
				if node, err = s.primaryFor(ctx, keys[0], to.addr); err != nil {
					return nil, err
				}
			}
			reply, err = s.runAcked(ctx, node, to.asking && node.Options().Addr == to.addr, keys, args, cutoff, acks)
		} else {
			reply, err = changeScript.Run(ctx, s.rdb, keys, args...).Slice()
		}
		next, moving := slotMoving(err)
		if err == nil || !moving {
			return reply, err
		}
		if next.addr != "" || !to.asking {
			to, node = next, nil
		}
		// A first MOVED or ASK names where to go: go at once. Anything else (TRYAGAIN, or
		// redirections bouncing while nodes learn the new owner) waits first.
		if next.addr != "" && !redirected {
			redirected = true
			continue
		}
		redirected = false
		if !pause(ctx, moveBackoff(attempt), cutoff) {
			return nil, err
		}
	}
}
