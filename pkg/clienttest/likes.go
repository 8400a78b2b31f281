package clienttest

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// writerClient keeps connections to writer-svc alive across the many likes a test sends.
var writerClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64},
}

// LikeReply is writer-svc's answer to a like.
type LikeReply struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	Liked  bool   `json:"liked"`
}

// TryLike sends one like and returns the HTTP status and the reply.
func TryLike(writerURL, post, user string) (int, LikeReply, error) {
	req, err := http.NewRequest(http.MethodPost, writerURL+"/like/"+post, nil)
	if err != nil {
		return 0, LikeReply{}, err
	}
	req.Header.Set("X-User-ID", user)
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

// StartLikeFlow likes post every interval, as users prefix-0, prefix-1, ... It stops when the
// test ends, if Stop was not called first.
func StartLikeFlow(t testing.TB, writerURL, post, prefix string, interval time.Duration) *LikeFlow {
	ctx, cancel := context.WithCancel(context.Background())
	f := &LikeFlow{stop: cancel, done: make(chan struct{})}
	go func() { // exits when Stop cancels ctx
		defer close(f.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		user := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			status, _, err := TryLike(writerURL, post, prefix+"-"+strconv.Itoa(user))
			if err == nil && status == http.StatusOK {
				f.sent.Add(1)
				user++
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
