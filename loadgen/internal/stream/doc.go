// Package stream is the read side of one SSE viewer connection as the load generator sees it: the
// raw bytes of an HTTP/1.1 response (status line, headers, then a body that may or may not use
// chunked transfer coding) in pieces of any size, turned into SSE events. It allocates nothing per
// event, so a generator holding tens of thousands of streams is never the bottleneck it measures.
package stream
