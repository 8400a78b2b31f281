package sse

import "strconv"

// Event names. A count update carries an id (what a reconnecting browser sends back as
// Last-Event-ID); a watching number never does, so it cannot move a stream's resume point.
const (
	EventCount     = "count"
	EventReactions = "reactions"
	EventWatching  = "watching"
)

// AppendWatching appends a watching event: `event: watching\ndata: <data>\n\n`, with no id line.
func AppendWatching(dst, data []byte) []byte { return AppendEvent(dst, nil, EventWatching, data) }

// AppendEvent appends one event frame: `id: <id>\nevent: <event>\ndata: <data>\n\n`. id and event
// are omitted when empty. data must not contain a newline (every payload here is one JSON line).
func AppendEvent(dst, id []byte, event string, data []byte) []byte {
	if len(id) > 0 {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	if event != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// AppendIntID appends the decimal form of n, for ids that are numbers.
func AppendIntID(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// AppendRetry appends a `retry:` field, the reconnection delay a browser's EventSource obeys.
func AppendRetry(dst []byte, millis int64) []byte {
	dst = append(dst, "retry: "...)
	dst = strconv.AppendInt(dst, millis, 10)
	return append(dst, '\n', '\n')
}

// Ping is the heartbeat comment; clients ignore it, proxies and dead peers notice it.
var Ping = []byte(": ping\n\n")
