package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// TestReadsShareBarriers: with REDIS_ACK_REPLICAS=1, 100 concurrent anonymous reads (GET
// /count/{postID}, /counts, /likes) cost the primary a handful of read barriers (a SET and a WAIT
// each), not one each; READ_ADDR_RATE, kept in the writer's memory, adds no call. Before the
// barriers were shared, 100 reads made 100 SETs and 100 WAITs.
// readGap is the read barrier gap of the writers whose barriers TestReadsShareBarriers counts:
// with it the count is bounded by construction, not by the machine's speed (the default, no gap,
// is measured in docs/BENCHMARKS.md, "What a read costs").
const readGap = 20 * time.Millisecond

func TestReadsShareBarriers(t *testing.T) {
	const reads = 100
	primary := redistest.Start(t)
	redistest.StartReplica(t, primary)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{name: "limit off"},
		{name: "limit on", flags: []string{"--read-addr-rate", "1200/1m burst 600"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := startWriter(t, primary, append([]string{trustHeader, "--redis-ack-replicas", "1", "--read-barrier-gap", readGap.String()}, tc.flags...)...)
			paths := []string{"/count/p", "/counts?posts=p,q", "/likes?posts=p,q"}
			// One connection per read, open before the count starts, so that the reads come
			// together rather than spread over 100 dials.
			w.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: reads}}
			t.Cleanup(w.Client.CloseIdleConnections)
			burst := func() ([]int, []error) {
				statuses, errs := make([]int, reads), make([]error, reads)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range reads {
					wg.Go(func() {
						<-start
						statuses[i], errs[i] = w.status(http.MethodGet, paths[i%len(paths)], "u"+strconv.Itoa(i))
					})
				}
				close(start)
				wg.Wait()
				return statuses, errs
			}
			burst() // opens the connections
			if _, err := primary.Do("CONFIG", "RESETSTAT"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			statuses, errs := burst()
			took := time.Since(start)
			for i, s := range statuses {
				if errs[i] != nil || s != http.StatusOK {
					t.Fatalf("read %d (%s): %d %v; want 200", i, paths[i%len(paths)], s, errs[i])
				}
			}
			waits, sets, scripts := primary.CommandCalls(t, "wait"), primary.CommandCalls(t, "set"), primary.ScriptCalls(t)
			t.Logf("%d concurrent reads in %s: %d WAIT, %d SET, %d scripts on the primary", reads, took, waits, sets, scripts)
			// Barriers start readGap apart at least: within took, no more than this many.
			maxWaits := min(int64(took/readGap)+1, reads/4)
			if waits < 1 || waits > maxWaits || sets > waits {
				t.Errorf("%d concurrent reads in %s made %d WAITs and %d SETs (%d scripts); want 1 to %d barriers, a SET and a WAIT each",
					reads, took, waits, sets, scripts, maxWaits)
			}
			if scripts != 0 {
				t.Errorf("%d concurrent reads from one address made %d script calls; want none (a read runs no script)", reads, scripts)
			}
		})
	}
}

// status sends a request as user from any goroutine (do fails the test, which only the test's own
// goroutine may) and returns its status.
func (w *testWriter) status(method, path, user string) (int, error) {
	req, err := http.NewRequest(method, w.URL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-User-ID", user)
	resp, err := w.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Body.Close()
}

// TestReadAddrRateLimit: READ_ADDR_RATE holds the reads of counts from one client address to a
// budget: past its burst each read route answers 429 with Retry-After and a JSON error, another
// address is still served, and the limit costs Redis nothing: no read, allowed or refused, writes
// to Redis (SET, or a script's), as the shared limiters' buckets would on each allowed event. A
// refused read makes no call at all.
func TestReadAddrRateLimit(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--read-addr-rate", "3/1h burst 3", "--trusted-proxies", "127.0.0.1/32")
	from := func(path, addr string) reply {
		return w.do(t, http.MethodGet, path, "X-User-ID: alice", "X-Forwarded-For: "+addr)
	}
	paths := []string{"/count/p", "/counts?posts=p", "/likes?posts=p"}
	writes := func() int64 { return w.Redis.CommandCalls(t, "set") + w.Redis.ScriptCalls(t) }
	before := writes()
	for _, path := range paths {
		if got := from(path, "203.0.113.7"); got.Status != http.StatusOK {
			t.Fatalf("GET %s within the budget: %d %s; want 200", path, got.Status, got.Raw)
		}
	}
	for _, path := range paths {
		got := from(path, "203.0.113.7")
		retry, _ := strconv.Atoi(got.Header.Get("Retry-After"))
		msg, _ := got.Body["error"].(string)
		// 3/1h: the next token is 20 minutes away.
		if got.Status != http.StatusTooManyRequests || retry < 1100 || retry > 1200 || !strings.Contains(msg, "too many reads from this address") {
			t.Errorf("GET %s past the budget: %d Retry-After %q %s; want 429 with Retry-After 1200 (one token of 3/1h) and a JSON error naming reads",
				path, got.Status, got.Header.Get("Retry-After"), got.Raw)
		}
	}
	gets, scripts := w.Redis.CommandCalls(t, "get"), w.Redis.ScriptCalls(t)
	for range 10 {
		if got := from("/count/p", "203.0.113.7"); got.Status != http.StatusTooManyRequests {
			t.Fatalf("a read past the budget: %d %s; want 429", got.Status, got.Raw)
		}
	}
	if g, s := w.Redis.CommandCalls(t, "get")-gets, w.Redis.ScriptCalls(t)-scripts; g != 0 || s != 0 {
		t.Errorf("10 refused reads cost Redis %d GETs and %d script calls; want none", g, s)
	}
	for _, path := range paths {
		if got := from(path, "203.0.113.8"); got.Status != http.StatusOK {
			t.Errorf("GET %s from another address: %d %s; want 200 (its own budget)", path, got.Status, got.Raw)
		}
	}
	if n := writes() - before; n != 0 {
		t.Errorf("%d reads, allowed and refused, made %d SETs and script calls on Redis; want none (reads never write on demand)", 2*len(paths)+10+len(paths), n)
	}
}
