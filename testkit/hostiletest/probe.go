package hostiletest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// probe is one raw request of a route attack and what its reply may be. Every reply must be a
// 4xx, a 503 or 429 (a server at its limits), a close, or for a request that is not refused a
// 2xx or 3xx; never another 5xx, and never silence past the server's own timeouts. Every error
// reply with a body says why in JSON ({"error": "..."}), as serve.Error writes it, unless it is
// net/http's own plain-text answer to a request it could not parse (no handler saw it).
type probe struct {
	route  Route
	method string // the request's method, to read its reply (a HEAD's has no body)
	raw    string // the request as sent: its head, and its body's start for a body attack
	// refuse marks a hostile request: it must be refused (4xx, 503, 429 or a close), never
	// served, and change nothing.
	refuse bool
	// more, if set, keeps sending after raw (a trickled or a huge body) until stop closes or the
	// server closes.
	more func(c net.Conn, stop <-chan struct{})
}

// wait bounds each probe: the longer of the server's head and read timeouts, and then some.
func wait(tg Target) time.Duration {
	return max(tg.HeadTimeout, tg.ReadTimeout) + 10*time.Second
}

// check sends p on a fresh connection and returns what is wrong with the reply, or nil.
func (p probe) check(tg Target) error {
	c, err := net.DialTimeout("tcp", tg.Addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s: dial: %w", p, err)
	}
	_ = c.SetDeadline(time.Now().Add(wait(tg)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when the request is sent, or stop closes, or the server closes
		defer wg.Done()
		if _, err := io.WriteString(c, p.raw); err != nil {
			return // the server may refuse a request before reading all of it
		}
		if p.more != nil {
			p.more(c, stop)
		}
	}()
	defer func() { close(stop); c.Close(); wg.Wait() }()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: p.method})
	switch {
	case isTimeout(err):
		return fmt.Errorf("%s: no reply and no close within %v", p, wait(tg))
	case err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		return nil // closed: a refusal
	case err != nil:
		return fmt.Errorf("%s: unreadable reply: %w", p, err)
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	if code < 400 {
		if p.refuse {
			return fmt.Errorf("%s: %d; a hostile request must be refused (4xx or a close)", p, code)
		}
		return nil // a stream's body never ends: not read
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if isTimeout(err) {
		return fmt.Errorf("%s: %d, and its body neither ended nor closed within %v", p, code, wait(tg))
	}
	own := ownReply(resp, body)
	if code >= 500 && code != http.StatusServiceUnavailable && (!own || code != http.StatusHTTPVersionNotSupported) {
		return fmt.Errorf("%s: %d %.200q; want a 4xx, a 503 or a close", p, code, body)
	}
	if len(body) == 0 || own {
		return nil
	}
	var e struct {
		Error string `json:"error"`
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%s: %d with a %q body %.200q; want a JSON error", p, code, ct, body)
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		return fmt.Errorf("%s: %d with body %.200q; want {\"error\": \"...\"}", p, code, body)
	}
	return nil
}

// ownReply reports net/http's own answer to a request it could not read (a bad request line or
// header, a head too large, an unsupported version): plain text naming the status, then a close,
// written before any handler runs.
func ownReply(resp *http.Response, body []byte) bool {
	code := resp.StatusCode
	return resp.Header.Get("Content-Type") == "text/plain; charset=utf-8" && resp.Close &&
		strings.HasPrefix(string(body), strconv.Itoa(code)+" "+http.StatusText(code))
}

// String names the probe in a failure: its route and the start of its request.
func (p probe) String() string {
	return fmt.Sprintf("%s %s: %.120q", p.route.Method, p.route.Pattern, p.raw)
}

// trickleBody sends a byte every tenth of every ReadTimeout, for as long as the server reads.
func trickleBody(tg Target) func(c net.Conn, stop <-chan struct{}) {
	return trickleEvery(max(tg.ReadTimeout, tg.HeadTimeout) / 10)
}

// trickleEvery sends a byte every interval until stop closes or a write fails (the server closed).
func trickleEvery(every time.Duration) func(c net.Conn, stop <-chan struct{}) {
	return func(c net.Conn, stop <-chan struct{}) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}
}

// hugeBody sends a megabyte of a body declared far larger: enough to show whether the server
// reads it before refusing.
func hugeBody(c net.Conn, _ <-chan struct{}) {
	_, _ = io.WriteString(c, strings.Repeat("a", 1<<20))
}

// checkAll runs the probes, a few dozen at a time (most of them wait on a server timeout), and
// returns every failure.
func checkAll(tg Target, probes []probe) []error {
	const workers = 32
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan probe)
	for range workers {
		wg.Add(1)
		go func() { // ends when next closes
			defer wg.Done()
			for p := range next {
				if err := p.check(tg); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range probes {
		next <- p
	}
	close(next)
	wg.Wait()
	return errs
}
