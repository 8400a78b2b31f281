package stream

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
)

// Routes of the stream endpoints, as the router names them (RoutePattern), for the request
// metrics of streams served by ServeConn.
const (
	RouteMulti  = "/sse"
	RouteSingle = "/sse/{postID}"
)

// ServeConn serves a stream whose head the fast accept loop read off conn (fastaccept): the
// same request rules, admission, refusals and hand-over to the hub as the routed handler, without
// net/http's buffers, request and goroutine. It takes only what it serves as a stream or refuses
// for the node's state (draining, full, an address at its limit, setup failed): those it answers
// itself, in the same JSON with the same Retry-After, and then closes the connection. Anything
// else (another path or method, a bad post list) it leaves untouched (ok false) for net/http,
// whose routed handler answers it exactly as before. route and status are for the request
// metrics.
func (h *Handler) ServeConn(conn net.Conn, hd *fastaccept.Head) (route string, status int, ok bool) {
	if hd.Method != http.MethodGet {
		return "", 0, false
	}
	var req streamRequest
	var err error
	switch path := hd.Path(); {
	case string(path) == RouteMulti:
		route = RouteMulti
		req, err = multiRequest(hd.RawQuery(), hd.Get("Last-Event-ID"), h.cfg.MaxPosts)
	case len(path) > len("/sse/") && string(path[:len("/sse/")]) == "/sse/" && ids.ValidPostID(string(path[len("/sse/"):])) == nil:
		route = RouteSingle
		req, err = singleRequest(string(path[len("/sse/"):]), hd.RawQuery(), hd.Get("Last-Event-ID"))
	default:
		return "", 0, false // the router's, even if only to answer 404 or 400
	}
	if err != nil {
		return "", 0, false
	}
	var src source
	if h.sources.limited() {
		src = source{remote: conn.RemoteAddr().String(), forwarded: hd.Values("X-Forwarded-For")}
	}
	// No request context: nothing watches the connection before the hub has it, so a client that
	// leaves during setup is found by the hub's first write; setup is bounded by SetupTimeout.
	v, no := h.admit(context.Background(), src, req.posts)
	if no != nil {
		h.count(no)
		writeRefusal(conn, no)
		return route, no.status, true
	}
	h.handOver(conn, v, req)
	return route, http.StatusOK, true
}

// refusalWriteTimeout bounds the write of a refusal; it fits any socket's buffer, so it only
// matters for a peer that is gone.
const refusalWriteTimeout = time.Second

// writeRefusal answers a stream turned away with what serve.Error and refuse write through
// net/http (status, Content-Type, Cache-Control, Retry-After, Date, the JSON body with its newline),
// then closes the connection: a stream request is its connection's only one.
func writeRefusal(conn net.Conn, no *refusal) {
	body, _ := json.Marshal(serve.ErrorBody{Error: no.msg})
	body = append(body, '\n')
	b := make([]byte, 0, 256+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(no.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(no.status)...)
	b = append(b, "\r\nCache-Control: no-store\r\nContent-Type: application/json\r\n"...)
	if no.retry > 0 {
		b = append(b, "Retry-After: "...)
		b = append(b, no.retryAfter()...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Date: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\nConnection: close\r\n\r\n"...)
	b = append(b, body...)
	_ = conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
	_, _ = conn.Write(b)
	_ = conn.Close()
}
