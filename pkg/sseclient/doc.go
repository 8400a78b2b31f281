// Package sseclient is the one SSE client of likes: it reads a stream as a fanout node sends it,
// the raw bytes of an HTTP/1.1 response (status line, headers, then a body with or without chunked
// transfer coding) turned into sse.Events by pkg/sse's Decoder.
//
// Stream is the push parser: bytes in, in pieces of any size, events out, nothing allocated per
// event, so loadgen's epoll workers can hold tens of thousands of streams without becoming the
// bottleneck they measure. Conn is a blocking client on top of it, over one TCP connection, for
// loadgen churn, the e2e crowd and every test that watches a stream: all of them read the wire
// exactly as loadgen does.
package sseclient
