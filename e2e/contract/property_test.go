package contract

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/likes/likes/testkit/poll"
)

var collect = flag.Bool("contract.collect", false,
	"record every distinct violation and go on drawing; fail at the end listing each once with its first request (no shrinking): a survey of an API with known violations")

// draw is one check of the property: one request, and what its reply must be.
func (f *fuzzer) draw(t *rapid.T) {
	c := drawCall(t, f.weighted, f.fx, f.ids, f.bases)
	if *budget > 0 && f.failures == 0 && time.Since(f.start) > *budget {
		return // the budget is spent: the remaining draws send nothing (but rapid's replays and shrinks of a failure do)
	}
	for _, s := range f.services {
		if err := s.ensureHealthy(); err != nil {
			t.Logf("%v", err)
			t.Fatalf("%s could not be restarted before the draw", s.name)
		}
	}
	r := c.send(f.client, *replyTimeout)
	f.sent++
	violation, detail := f.judge(c, r)
	if violation == "" {
		f.record(c, r)
		return
	}
	if *collect {
		f.collected(violation, detail)
		return
	}
	t.Logf("%s", detail)
	f.failures++
	if f.failures == 1 { // rapid shows only the last replay's log; a hang may not happen again
		f.t.Logf("first failing draw (after %d requests):\n%s", f.sent, detail)
	}
	t.Fatalf("%s", violation)
}

// judge returns the property's first violation by c's reply r, "" if none, and the request and
// reply in detail. A violation's text names the operation and the kind of violation only, never
// values that change from run to run: rapid shrinks a failing draw while the text stays the same.
func (f *fuzzer) judge(c *call, r reply) (violation, detail string) {
	if r.err != nil && refusedHead(c, r) {
		return "", ""
	}
	if r.err != nil {
		svc := f.serviceOf(c)
		detail := c.describe(r) + "\n" + f.health()
		if !errors.Is(r.err, context.DeadlineExceeded) {
			svc.markSuspect()
			// A process killed (by the watchdog, or a crash) closes its connections before its
			// parent has reaped it: give its exit a moment to be seen, so the log says why.
			_ = poll.For(2*time.Second, func() error {
				if svc.health() == "" {
					return errors.New("running")
				}
				return nil
			})
			return fmt.Sprintf("%s: the connection ended without a whole reply", c.op), c.describe(r) + "\n" + f.health()
		}
		if svc.health() == "" {
			detail += "  " + svc.name + "'s goroutines at the timeout (SIGQUIT): " + svc.dumpGoroutines() + "\n"
		}
		return fmt.Sprintf("%s: no whole reply within %v", c.op, *replyTimeout), detail
	}
	for _, s := range f.services {
		if s.health() != "" {
			return fmt.Sprintf("%s is not running after a request to %s", s.name, c.op), c.describe(r) + "\n" + f.health()
		}
	}
	if r.status >= 500 && (r.status != http.StatusServiceUnavailable || !c.op.documented(r.status)) {
		return fmt.Sprintf("%s: %d (no 5xx but a documented 503 is allowed)", c.op, r.status), c.describe(r)
	}
	if r.status/100 == 2 && !c.op.accepts(c.identity) {
		return fmt.Sprintf("%s: a %d to identity %q, which its security does not accept", c.op, r.status, c.identity), c.describe(r)
	}
	if headTooLarge(c, r) {
		return "", ""
	}
	if err := conforms(c, r); err != nil {
		return fmt.Sprintf("%s: a %d reply that does not conform to the document", c.op, r.status),
			fmt.Sprintf("%s\n  does not conform: %v", c.describe(r), err)
	}
	return "", ""
}

// headTooLarge reports whether r is net/http's own 431 to a request head over the server's
// MAX_HEADER_BYTES (16 KiB by default; a few 8 KB values make one), given before any handler
// runs, in text/plain. It is the server's documented limit (docs/CONFIGURATION.md) rather than an
// operation's reply, so an operation whose document does not list 431 itself is not failed for
// it; one that lists it is held to what it says. The summary counts these.
func headTooLarge(c *call, r reply) bool {
	return r.status == http.StatusRequestHeaderFieldsTooLarge && c.op.op.Responses.Value("431") == nil &&
		string(r.body) == "431 Request Header Fields Too Large"
}

// maxHead is what net/http reads of a request head before it answers 431 (MAX_HEADER_BYTES,
// 16 KiB by default, plus the 4 KiB net/http allows past it).
const maxHead = 16<<10 + 4<<10

// refusedHead reports whether r is a connection the server closed (reset) while the client was
// still sending a head longer than it reads: the server answered 431 and closed, and the kernel
// reset the connection with the rest of the head unread, which may lose the 431 on its way.
func refusedHead(c *call, r reply) bool {
	return c.headSize() > maxHead && !errors.Is(r.err, context.DeadlineExceeded)
}

// finding is one distinct violation seen in -contract.collect mode.
type finding struct {
	violation, first string
	count            int
}

// collected records a violation in -contract.collect mode: its first request in full, then a count.
func (f *fuzzer) collected(violation, detail string) {
	for _, fd := range f.findings {
		if fd.violation == violation {
			fd.count++
			return
		}
	}
	f.findings = append(f.findings, &finding{violation: violation, first: detail, count: 1})
	f.t.Logf("new violation after %d requests: %s\n%s", f.sent, violation, detail)
}

// report fails the test with every violation collected, each once.
func (f *fuzzer) report() {
	if len(f.findings) == 0 {
		return
	}
	slices.SortFunc(f.findings, func(a, b *finding) int { return strings.Compare(a.violation, b.violation) })
	var b strings.Builder
	for _, fd := range f.findings {
		fmt.Fprintf(&b, "\n%s (%d times); the first:\n%s\n", fd.violation, fd.count, fd.first)
	}
	f.t.Errorf("%d distinct violations:%s", len(f.findings), b.String())
}
