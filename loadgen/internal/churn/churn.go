// Package churn opens short-lived viewer streams at a steady rate, as phones on a flaky network
// do: each connects, waits for its response head, holds the stream for a while and drops it. A
// soak runs it beside a ramp to prove that connects and disconnects leak nothing on a node.
package churn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/pkg/sseclient"
)

// Config says how many streams to open, where, and for how long.
type Config struct {
	Fanout   []string      // node base URLs; stream i goes to Fanout[i % len]
	Rate     float64       // streams opened per second
	Hold     time.Duration // how long each stream stays open
	Duration time.Duration // how long to keep churning
	Posts    int           // stream i follows post "<Prefix><i % Posts>"
	Prefix   string
}

// Result counts what happened to the streams.
type Result struct {
	Opened  int64 `json:"opened"`  // got 200 and an event stream
	Refused int64 `json:"refused"` // got a non-200 answer (a full node answers 503)
	Failed  int64 `json:"failed"`  // could not connect or read the response head
}

// Run churns until cfg.Duration has passed or ctx is done, then waits for the open streams.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Fanout) == 0 || cfg.Rate <= 0 || cfg.Posts <= 0 {
		return Result{}, fmt.Errorf("churn needs fanout URLs, a positive rate and posts")
	}
	hosts := make([]string, len(cfg.Fanout))
	for i, raw := range cfg.Fanout {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return Result{}, fmt.Errorf("fanout url %q: not a URL", raw)
		}
		hosts[i] = u.Host
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var res counters
	var wg sync.WaitGroup
	t := time.NewTicker(time.Duration(float64(time.Second) / cfg.Rate))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			return res.result(), nil
		case <-t.C:
		}
		wg.Add(1)
		go func() { // exits after cfg.Hold, or at once if the stream fails
			defer wg.Done()
			res.count(open(hosts[i%len(hosts)], fmt.Sprintf("/sse/%s%d", cfg.Prefix, i%cfg.Posts), cfg.Hold))
		}()
	}
}

type outcome int

const (
	opened outcome = iota
	refused
	failed
)

// open holds one stream for hold and reports how it went.
func open(host, path string, hold time.Duration) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := sseclient.Dial(ctx, sseclient.Request{Addr: host, Path: path})
	if err != nil {
		return failed
	}
	defer c.Close()
	var se *sseclient.StatusError
	if err := c.Head(ctx); errors.As(err, &se) {
		return refused
	} else if err != nil {
		return failed
	}
	time.Sleep(hold) // the stream stays open, unread: a viewer that goes away mid-stream
	return opened
}

type counters struct{ opened, refused, failed atomic.Int64 }

func (c *counters) count(o outcome) {
	switch o {
	case opened:
		c.opened.Add(1)
	case refused:
		c.refused.Add(1)
	default:
		c.failed.Add(1)
	}
}

func (c *counters) result() Result {
	return Result{Opened: c.opened.Load(), Refused: c.refused.Load(), Failed: c.failed.Load()}
}
