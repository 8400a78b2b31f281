package stream

import (
	"math/rand/v2"
	"time"

	"github.com/likes/likes/pkg/sse"
)

// responseHead is every stream's response head, written raw by the hub: the connection has left
// net/http, and a stream has no length, so it is neither chunked nor keep-alive.
const responseHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream\r\n" +
	"Cache-Control: no-cache\r\n" +
	"X-Accel-Buffering: no\r\n" +
	"Access-Control-Allow-Origin: *\r\n" +
	"\r\n"

// preambleVariants is how many retry hints the jitter picks from: steps of 1/128 of the jitter
// span (about 8 ms at the 2 s default) spread a crowd as well as milliseconds would.
const preambleVariants = 128

// newPreambles builds, once, the raw response heads (the connection leaves net/http, so the hub
// writes it) each followed by a retry hint between retry and 1.5x retry, evenly spaced. A connect
// picks one at random (preamble) instead of encoding its own: no allocation per viewer, and the
// hub only copies it.
func newPreambles(retry time.Duration) [][]byte {
	base := retry.Milliseconds()
	out := make([][]byte, preambleVariants)
	for i := range out {
		b := make([]byte, 0, len(responseHead)+24)
		b = append(b, responseHead...)
		b = sse.AppendRetry(b, base+base/2*int64(i)/(preambleVariants-1))
		out[i] = b[:len(b):len(b)]
	}
	return out
}

// preamble is the response head and a retry hint jittered per viewer, so that viewers dropped
// together do not return together. The bytes are shared by every viewer: read-only.
func (h *Handler) preamble() []byte {
	return h.preambles[rand.IntN(len(h.preambles))]
}
