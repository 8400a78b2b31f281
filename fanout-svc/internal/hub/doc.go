// Package hub is the fan-out engine: it turns one update of a post into a write of one shared,
// pre-encoded frame to every local viewer of that post.
//
// After the SSE response headers, a viewer's connection leaves net/http and becomes a small viewer
// struct owned by one loop. A loop is one goroutine around an epoll instance: it writes frames
// with non-blocking write(2) calls, learns of disconnects and of writability from epoll, and runs
// heartbeats, flush windows and rate caps from its own clock. No goroutine and no timer exists per
// viewer, so an idle viewer costs its struct and its socket, and nothing else.
//
// Updates reach loops through a conflating inbox: Publish records the post's newest frame and
// marks the post dirty in every loop; a loop that is busy simply finds the newest frame when it
// gets there. A viewer whose socket is full keeps the unwritten rest of one write plus a dirty bit
// per post, never a queue: when the socket drains it gets each post's newest frame. So under
// overload the hub gets staler, never bigger, and every viewer converges.
//
// The posts themselves, their frames and their Redis subscriptions are package posts': the hub
// reads a post's frames and gives back the references its viewers held. The lock order of the
// node is written down in fanout-svc/LOCKS.md.
package hub
