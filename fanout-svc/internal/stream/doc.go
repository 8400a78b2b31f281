// Package stream is the SSE endpoint of a fanout node: it validates a request, reserves a viewer
// slot, makes sure the node is subscribed to every requested post, reads their current state,
// then takes the connection out of net/http and hands it to the hub.
package stream
