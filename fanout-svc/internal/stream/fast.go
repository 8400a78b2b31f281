package stream

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/likes/likes/fanout-svc/internal/fastaccept"
	"github.com/likes/likes/fanout-svc/internal/hub"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/update"
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
// else (another path or method, a bad post list) it declines, for net/http, whose routed handler
// answers it exactly as before. route and status are for the request metrics.
//
// With mayBlock false it runs on the event loop that accepted the connection: it serves a stream
// whose posts the node has subscribed and knows (the common case: a popular post) at once, and
// answers fastaccept.Blocking, having taken nothing, for one that would wait on Redis (a
// subscription or a snapshot), which the loop then hands to a goroutine that calls it again.
func (h *Handler) ServeConn(conn net.Conn, hd *fastaccept.Head, mayBlock bool) (route string, status int, out fastaccept.Outcome) {
	route, req, ok := fastRequest(hd, h.cfg.MaxPosts)
	if !ok {
		return "", 0, fastaccept.Declined
	}
	var src source
	if h.sources.limited() {
		src = source{remote: conn.RemoteAddr().String(), forwarded: hd.Values("X-Forwarded-For")}
	}
	var v hub.Viewer
	var no *refusal
	if mayBlock {
		// No request context: nothing watches the connection before the hub has it, so a client
		// that leaves during setup is found by the hub's first write; setup is bounded by
		// SetupTimeout.
		v, no = h.admit(context.Background(), src, req.posts)
	} else if v, no = h.admitNow(src, req.posts); no == &wouldWait {
		return route, 0, fastaccept.Blocking
	}
	if no != nil {
		h.count(no)
		writeRefusal(conn, no)
		return route, no.status, fastaccept.Taken
	}
	h.handOver(conn, v, req)
	return route, http.StatusOK, fastaccept.Taken
}

// fastRequest reads a stream request from a head the fast accept loop read, by the rules the
// routed handlers apply to net/http's reading of the same bytes (FuzzFastRequestMatchesRouter);
// ok false leaves the head to net/http: another path or method, or anything the router answers
// 404 or 400, which it then does exactly as before.
func fastRequest(hd *fastaccept.Head, maxPosts int) (route string, req streamRequest, ok bool) {
	if hd.Method != http.MethodGet {
		return "", streamRequest{}, false
	}
	var err error
	switch path := hd.Path(); {
	case string(path) == RouteMulti:
		route = RouteMulti
		req, err = multiRequest(hd.RawQuery(), hd.Get("Last-Event-ID"), maxPosts)
	case len(path) > len("/sse/") && string(path[:len("/sse/")]) == "/sse/" && ids.ValidPostID(string(path[len("/sse/"):])) == nil:
		route = RouteSingle
		req, err = singleRequest(string(path[len("/sse/"):]), hd.RawQuery(), hd.Get("Last-Event-ID"))
	default:
		return "", streamRequest{}, false
	}
	return route, req, err == nil
}

// wouldWait is admitNow's answer for a stream whose setup would wait on Redis; it is never
// written to a client.
var wouldWait = refusal{status: http.StatusServiceUnavailable, msg: "setup would wait"}

// admitNow is admit for an event loop: the same checks and admission, for posts the node has
// subscribed and knows, whose state needs no Redis. For any other it gives back what it took
// and answers &wouldWait.
func (h *Handler) admitNow(src source, posts []string) (hub.Viewer, *refusal) {
	release, no := h.reserve(src)
	if no != nil {
		return hub.Viewer{}, no
	}
	acquired, ok := h.posts.AcquireKnown(posts)
	if !ok {
		h.giveBack(hub.Viewer{OnClose: release})
		return hub.Viewer{}, &wouldWait
	}
	snap := make([]update.Update, len(posts))
	for i := range snap {
		snap[i] = update.Update{PostID: posts[i]}
	}
	return hub.Viewer{Posts: acquired, Snapshot: snap, OnClose: release}, nil
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
	b = append(b, "\r\n"+refusalCORS+"Cache-Control: no-store\r\nContent-Type: application/json\r\n"...)
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
