package relay

import (
	"context"
	"time"
)

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
			for _, u := range states {
				r.stats.Resyncs.Add(1)
				r.sink.Publish(u)
			}
		}
	}
}
