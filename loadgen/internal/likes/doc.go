// Package likes drives writer-svc: closed-loop writers (each sends its next like when the last is
// answered, as in the original benchmark) or an open loop at a fixed rate (for latency under a
// known load). Every like is by a fresh user, so every like is counted and published, and its
// answer's count identifies it. The user is named by a session token signed with the deployment's
// key (WithSessions), or in X-User-ID for a writer that trusts that header.
//
// A like must cost the generator much less CPU than it costs the writer, or the generator, not
// the writer, sets the figures. So the like path is a lean HTTP/1.1 client of its own
// rather than net/http: a fixed set of keep-alive connections, each owned by one goroutine that
// appends its requests into a reused buffer and reads the answers with a reused bufio.Reader,
// parsing only the status line, the framing headers and the body's "count" and "liked".
package likes
