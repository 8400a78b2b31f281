package clienttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/pkg/writerapi"
	"github.com/likes/likes/testkit/apicheck"
)

// writerClient keeps connections to writer-svc alive across the many likes a test sends.
var writerClient = &http.Client{
	Timeout: 10 * time.Second,
	// Replies from a service a test registered (apicheck.Serve) must be as its document says.
	Transport: apicheck.Wrap(&http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}),
}

// CloseIdleConnections closes the keep-alive connections the helpers hold to writers and nodes:
// a suite whose deployment outlives it (a cluster left running) would otherwise find their read
// loops in its goroutine check.
func CloseIdleConnections() {
	writerClient.CloseIdleConnections()
	metricsClient.CloseIdleConnections()
}

// LikeReply is writer-svc's answer to a like.
type LikeReply = writerapi.LikeReply

// TryLike sends one like by user, named in X-User-ID (a writer with TRUST_USER_HEADER=true), and
// returns the HTTP status and the reply.
func TryLike(writerURL, post, user string) (int, LikeReply, error) {
	return tryLike(writerURL, post, "X-User-ID", user)
}

// TryLikeAs sends one like with a session's token and returns the HTTP status and the reply.
func TryLikeAs(writerURL, post string, s Session) (int, LikeReply, error) {
	return TryLikeBearer(writerURL, post, s.Token)
}

// TryLikeBearer sends one like with Authorization: Bearer token (a session's, a site's, or a
// forged one) and returns the HTTP status and the reply.
func TryLikeBearer(writerURL, post, token string) (int, LikeReply, error) {
	return tryLike(writerURL, post, "Authorization", "Bearer "+token)
}

func tryLike(writerURL, post, header, value string) (int, LikeReply, error) {
	req, err := http.NewRequest(http.MethodPost, writerURL+"/like/"+post, nil)
	if err != nil {
		return 0, LikeReply{}, err
	}
	req.Header.Set(header, value)
	resp, err := writerClient.Do(req)
	if err != nil {
		return 0, LikeReply{}, err
	}
	defer resp.Body.Close()
	var r LikeReply
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return resp.StatusCode, r, err
		}
	}
	return resp.StatusCode, r, nil
}

// LikeFlow keeps liking a post from fresh users at a steady pace until stopped. Likes that fail
// (Redis away) are retried by the same user, as a client would, so every user is counted once.
type LikeFlow struct {
	stop   context.CancelFunc
	done   chan struct{}
	sent   atomic.Int64 // likes acknowledged with 200
	failed atomic.Int64 // attempts that got no 200
}

// StartLikeFlow likes post every interval, as users prefix-0, prefix-1, ... named in X-User-ID
// (a writer with TRUST_USER_HEADER=true). It stops when the test ends, if Stop was not called
// first.
func StartLikeFlow(t testing.TB, writerURL, post, prefix string, interval time.Duration) *LikeFlow {
	user := 0
	return startLikeFlow(t, interval, func() bool {
		status, _, err := TryLike(writerURL, post, prefix+"-"+strconv.Itoa(user))
		if err != nil || status != http.StatusOK {
			return false
		}
		user++
		return true
	})
}

// StartSessionLikeFlow is StartLikeFlow where each fresh user is a new session (POST /session),
// as pages are; a user whose like failed retries with its session. The writer's SESSION_RATE
// must allow a session per interval from this address.
func StartSessionLikeFlow(t testing.TB, writerURL, post string, interval time.Duration) *LikeFlow {
	var s Session
	return startLikeFlow(t, interval, func() bool {
		if s.Token == "" {
			var err error
			if s, err = TakeSession(writerURL); err != nil {
				return false
			}
		}
		status, _, err := TryLikeAs(writerURL, post, s)
		if err != nil || status != http.StatusOK {
			return false
		}
		s = Session{}
		return true
	})
}

// startLikeFlow calls like every interval on one goroutine until Stop, counting its outcomes:
// like reports whether a fresh user's like was acknowledged.
func startLikeFlow(t testing.TB, interval time.Duration, like func() bool) *LikeFlow {
	ctx, cancel := context.WithCancel(context.Background())
	f := &LikeFlow{stop: cancel, done: make(chan struct{})}
	go func() { // exits when Stop cancels ctx
		defer close(f.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if like() {
				f.sent.Add(1)
			} else {
				f.failed.Add(1)
			}
		}
	}()
	t.Cleanup(f.Stop)
	return f
}

// Stop ends the flow and waits for its last like to finish.
func (f *LikeFlow) Stop() {
	f.stop()
	<-f.done
}

// Sent is the number of likes acknowledged with 200 so far.
func (f *LikeFlow) Sent() int64 { return f.sent.Load() }

// Failed is the number of attempts that got no 200 so far.
func (f *LikeFlow) Failed() int64 { return f.failed.Load() }

// CountOf asks the writer (or a balancer in front of it) for a post's count, failing the test if
// it does not answer 200 with a count.
func CountOf(t testing.TB, writerURL, post string) int64 {
	t.Helper()
	n, err := TryCountOf(writerURL, post)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TryCountOf is CountOf for a test that waits out a writer which cannot answer yet (its Redis
// restarting): an answer other than 200 with a count is an error.
func TryCountOf(writerURL, post string) (int64, error) {
	resp, err := writerClient.Get(writerURL + "/count/" + post)
	if err != nil {
		return 0, fmt.Errorf("GET /count/%s: %w", post, err)
	}
	defer resp.Body.Close()
	var r LikeReply
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
		return 0, fmt.Errorf("GET /count/%s: %d", post, resp.StatusCode)
	}
	return r.Count, nil
}

// ReactionsOf asks the writer (or a balancer in front of it) for a post's reaction counts per
// kind (GET /counts), failing the test if it does not answer 200 with them.
func ReactionsOf(t testing.TB, writerURL, post string) map[string]int64 {
	t.Helper()
	resp, err := writerClient.Get(writerURL + "/counts?posts=" + url.QueryEscape(post))
	if err != nil {
		t.Fatalf("GET /counts?posts=%s: %v", post, err)
	}
	defer resp.Body.Close()
	var r struct {
		Posts []struct {
			Reactions map[string]int64 `json:"reactions"`
		} `json:"posts"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Posts) != 1 || r.Posts[0].Reactions == nil {
		t.Fatalf("GET /counts?posts=%s: %d, no reactions", post, resp.StatusCode)
	}
	return r.Posts[0].Reactions
}
