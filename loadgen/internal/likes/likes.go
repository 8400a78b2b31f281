package likes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/sessiontoken"
)

// Load sends likes to one writer over at most maxConns keep-alive connections of its own.
type Load struct {
	posts    []string
	userBase string
	timeout  time.Duration
	maxConns int
	pipeline int                    // requests written at once on one connection
	host     string                 // host[:port] of the writer URL, to resolve and for the Host header
	heads    [][]byte               // per post: the request up to what names the like's user
	urlErr   error                  // the writer URL is unusable: every like fails with it
	keys     sessiontoken.KeySource // WithSessions; nil: X-User-ID
	react    *reactions             // WithReactions; nil: likes
	seq      atomic.Int64
	rec      *Recorder

	resolveMu sync.Mutex // held while resolving, so the host is looked up once
	addr      string     // the resolved ip:port; "" until resolved

	idleMu sync.Mutex
	idle   []*conn // connections kept between runs
}

// Option changes how a Load sends.
type Option func(*Load)

// WithPipeline lets one connection carry up to k likes at once, written together (HTTP/1.1
// pipelining; the writer answers them in order). The default, 1, is one like per connection at a
// time, as a browser sends them and as wrk measures the writer: pipelining lets the writer read
// several requests per read(2), so it makes the writer's CPU per like look cheaper than it is.
func WithPipeline(k int) Option {
	return func(l *Load) { l.pipeline = max(k, 1) }
}

// New returns a load against writer (an http:// base URL) for posts. userPrefix makes user ids
// unique to this run; maxConns bounds the connections to the writer; timeout bounds each like
// (dial, request and answer). A writer URL that cannot be used makes every like fail, saying why.
// Users are named in X-User-ID unless WithSessions.
func New(writer string, posts []string, userPrefix string, maxConns int, timeout time.Duration, opts ...Option) *Load {
	l := &Load{
		posts:    posts,
		userBase: userPrefix,
		timeout:  timeout,
		maxConns: max(maxConns, 1),
		pipeline: 1,
		rec:      NewRecorder(len(posts)),
	}
	for _, o := range opts {
		o(l)
	}
	var path string
	l.host, path, l.urlErr = parseWriter(writer)
	if l.react != nil {
		l.heads = reactionHeads(path, l.host, l.identityHeader(), posts, l.react.kinds)
		l.SetAudience(1)
		return l
	}
	for _, post := range posts {
		l.heads = append(l.heads, requestHead(path, post, l.host, l.identityHeader()))
	}
	return l
}

// parseWriter returns the host and the path prefix of a writer base URL.
func parseWriter(writer string) (host, path string, err error) {
	u, err := url.Parse(writer)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("writer URL: %w", err)
	case u.Scheme != "http":
		return "", "", fmt.Errorf("writer URL %q: only http:// is supported", writer)
	case u.Host == "":
		return "", "", fmt.Errorf("writer URL %q has no host", writer)
	}
	return u.Host, strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

// requestHead is a like of post up to the part of its identity header that differs per like,
// which the sender appends with the request's end. Content-Length: 0 tells the writer there is no
// body.
func requestHead(path, post, host, identity string) []byte {
	return []byte("POST " + path + "/like/" + url.PathEscape(post) + " HTTP/1.1\r\nHost: " + host +
		"\r\nContent-Length: 0\r\n" + identity)
}

// Recorder returns where the load records its likes.
func (l *Load) Recorder() *Recorder { return l.rec }

// Close closes the idle connections. The load stays usable: a later run dials new ones.
func (l *Load) Close() {
	l.idleMu.Lock()
	idle := l.idle
	l.idle = nil
	l.idleMu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// Once sends one like to post, by a fresh user, and waits for its answer; the Recorder has it
// (in its window, if one is set).
func (l *Load) Once(ctx context.Context, post int) {
	c := l.getConn()
	defer l.putConn(c)
	l.send(ctx, c, []job{{post: post}})
}

// getConn returns an idle connection, or a new one not yet dialled.
func (l *Load) getConn() *conn {
	l.idleMu.Lock()
	defer l.idleMu.Unlock()
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		return c
	}
	return &conn{}
}

// putConn keeps c for the next run when it is connected.
func (l *Load) putConn(c *conn) {
	if c.nc == nil {
		return
	}
	l.idleMu.Lock()
	defer l.idleMu.Unlock()
	l.idle = append(l.idle, c)
}

// address returns the writer's ip:port, resolving its host the first time it succeeds.
func (l *Load) address(ctx context.Context) (string, error) {
	if l.urlErr != nil {
		return "", l.urlErr
	}
	l.resolveMu.Lock()
	defer l.resolveMu.Unlock()
	if l.addr != "" {
		return l.addr, nil
	}
	host, port, err := net.SplitHostPort(l.host)
	if err != nil {
		host, port = strings.Trim(l.host, "[]"), "80"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ctx, cancel := context.WithTimeout(ctx, l.timeout)
		defer cancel()
		ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if lerr != nil {
			return "", fmt.Errorf("resolve writer: %w", lerr)
		}
		ip = ips[0]
	}
	l.addr = net.JoinHostPort(ip.Unmap().String(), port)
	return l.addr, nil
}

// Closed runs writers closed-loop writers until ctx is done; it returns when all have stopped.
// Each writer sends its next like when the last is answered. The writers share min(writers,
// maxConns) connections (times the pipeline depth): writers beyond what the connections carry
// would only wait for one, as they would in any client's connection pool, so they are not run.
// A like in flight when ctx ends is allowed to finish (within the timeout), so stopping the load
// does not turn stored likes into errors.
func (l *Load) Closed(ctx context.Context, writers int) {
	if writers < 1 {
		return
	}
	conns := min(l.maxConns, ceilDiv(writers, l.pipeline))
	inflight := min(writers, conns*l.pipeline)
	reqCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { l.closedConn(ctx, reqCtx, i, conns, inflight) }) // exits when ctx is done
	}
	wg.Wait()
}

// closedConn carries the writers i, i+conns, ... below inflight on one connection until ctx is
// done. Writer w likes posts w, w+inflight, w+2*inflight, ... (mod the posts), so every post gets
// its share whatever the number of writers.
func (l *Load) closedConn(ctx, reqCtx context.Context, i, conns, inflight int) {
	c := l.getConn()
	defer l.putConn(c)
	var next []int
	for w := i; w < inflight; w += conns {
		next = append(next, w)
	}
	batch := make([]job, len(next))
	done := ctx.Done()
	for {
		select {
		case <-done:
			return
		default:
		}
		for j := range batch {
			batch[j] = job{post: next[j] % len(l.posts)}
			next[j] += inflight
		}
		l.send(reqCtx, c, batch)
	}
}

// job is one like to send.
type job struct {
	post  int       // index into posts
	kind  int       // a reaction's: index into the kinds
	start time.Time // when the like fell due; zero: when it is written (closed loop)
	seq   int64     // numbers its fresh user, or a reaction's person
}

// errClosedEarly ends likes written on a connection that the writer closed before answering them.
var errClosedEarly = errors.New("writer closed the connection before answering (Connection: close)")

// send sends batch's likes on c, each by a fresh user, written together; then it reads their
// answers in order and records each like. On an error the connection is closed (the next send
// dials again) and every like not answered counts as an error.
func (l *Load) send(ctx context.Context, c *conn, batch []job) {
	if l.react != nil {
		l.react.wait(batch)
	}
	now := time.Now()
	first := l.seq.Add(int64(len(batch))) - int64(len(batch)) + 1
	for i := range batch {
		if l.react == nil {
			batch[i].seq = first + int64(i)
		}
		if batch[i].start.IsZero() {
			batch[i].start = now
		}
	}
	err := c.ready(ctx, l, now)
	if err == nil {
		c.wbuf = l.appendRequests(c.wbuf[:0], c, batch, now)
		if err = c.write(c.wbuf); err != nil {
			err = exchangeError("send", err, l.timeout)
		}
	}
	answered := 0
	if err == nil {
		answered, err = l.answers(c, batch)
	}
	if err != nil {
		c.close()
		end := time.Now()
		for _, j := range batch[answered:] {
			l.rec.record(j.post, 0, 0, err, j.start, end)
		}
	}
}

// answers reads and records the answers to batch, in order. It returns how many it read: fewer
// than the batch when the connection failed (err) or the writer closed it.
func (l *Load) answers(c *conn, batch []job) (int, error) {
	for i, j := range batch {
		a, err := c.read()
		if err != nil {
			return i, exchangeError("answer", err, l.timeout)
		}
		l.answered(a, c.body, j)
		if a.close {
			c.close()
			if i+1 < len(batch) {
				return i + 1, errClosedEarly
			}
		}
	}
	return len(batch), nil
}

// appendRequests appends the requests of batch, sent on c at now, to dst: no formatting, nothing
// allocated once dst has grown to a batch's size.
func (l *Load) appendRequests(dst []byte, c *conn, batch []job, now time.Time) []byte {
	for _, j := range batch {
		if l.react != nil {
			dst = append(dst, l.heads[j.post*len(l.react.kinds)+j.kind]...)
		} else {
			dst = append(dst, l.heads[j.post]...)
		}
		dst = l.appendIdentity(dst, c, j.seq, now)
		dst = append(dst, "\r\n\r\n"...)
	}
	return dst
}

// answered records the answer to j.
func (l *Load) answered(a answer, body []byte, j job) {
	end := time.Now()
	if l.react == nil {
		count, err := l.judge(a, body, j.seq)
		l.rec.record(j.post, count, 0, err, j.start, end)
		return
	}
	count, ts, err := judgeReaction(a, body)
	if err == nil {
		l.react.acked(j.seq, end)
	}
	l.rec.record(j.post, count, ts, err, j.start, end)
}

// judge turns an answer into the like's count or its error. A fresh user's like must be counted:
// liked:false means the writer did not store it.
func (l *Load) judge(a answer, body []byte, seq int64) (int64, error) {
	switch a.status {
	case http.StatusOK:
	case http.StatusTooManyRequests:
		return 0, errors.New("status 429: a like limit of the writers refused it (all of loadgen's likes come from one " +
			"address, which LIKE_ADDR_RATE counts together: a load test runs the writers with LIKE_ADDR_RATE=off)")
	case http.StatusUnauthorized:
		return 0, errors.New("status 401: the writer refused the like's identity (--identity header needs writers with " +
			"TRUST_USER_HEADER=true; --identity session needs the deployment's Redis and SESSION_KEY_ROTATE)")
	default:
		return 0, fmt.Errorf("status %d", a.status)
	}
	count, liked, err := scanLike(body)
	if err != nil {
		return 0, fmt.Errorf("decode answer: %w", err)
	}
	if !liked {
		return 0, fmt.Errorf("like by fresh user %s not counted", l.userBase+strconv.FormatInt(seq, 36))
	}
	return count, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
