// Package stream is the SSE endpoint of a fanout node: it validates a request, admits the viewer
// (within its address's quota and the node's), makes sure the node is subscribed to every
// requested post, reads their current state, then takes the connection out of net/http and hands
// it to the hub.
package stream
