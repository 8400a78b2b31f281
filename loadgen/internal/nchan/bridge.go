package nchan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/rediskeys"
)

// BridgeConfig is what `loadgen nchan-bridge` needs: where the writer publishes and where Nchan's
// publisher location listens.
type BridgeConfig struct {
	Redis     string // host:port
	Publisher string // base URL; a post's channel is Publisher+"/"+post
	Prefix    string // the deployment's REDIS_PREFIX
}

// BridgeResult is printed as JSON when the bridge stops.
type BridgeResult struct {
	Forwarded int64  `json:"forwarded"`
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
}

// Bridge PSUBSCRIBEs to every post's channel and POSTs each payload, unchanged, to the post's
// publisher URL, one at a time and in the order Redis delivered them (so a viewer's counts arrive
// in order), over one keep-alive connection. ready is called once the subscription is confirmed.
// A failed POST is counted and logged (at most once a second) and the next message goes on: at
// the benchmark's few likes a second a retry would only reorder counts. It returns when ctx ends.
func Bridge(ctx context.Context, cfg BridgeConfig, ready func(pattern string), logw io.Writer) (BridgeResult, error) {
	var res BridgeResult
	keys := rediskeys.New(cfg.Prefix)
	pattern := keys.Channel("*")
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Redis})
	defer rdb.Close()
	ps := rdb.PSubscribe(ctx, pattern)
	defer ps.Close()
	// A blocked receive does not watch ctx: closing the subscription ends it.
	stopClose := context.AfterFunc(ctx, func() { ps.Close() })
	defer stopClose()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		return res, fmt.Errorf("psubscribe %s on %s: %w", pattern, cfg.Redis, err)
	}
	if ready != nil {
		ready(pattern)
	}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute},
	}
	defer client.CloseIdleConnections()
	base := strings.TrimSuffix(cfg.Publisher, "/")
	var lastLog time.Time
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return res, nil
			}
			return res, fmt.Errorf("receive from %s: %w", cfg.Redis, err)
		}
		post, ok := keys.PostFromChannel(msg.Channel)
		if !ok {
			continue
		}
		if err := publish(ctx, client, base+"/"+url.PathEscape(post), msg.Payload); err != nil {
			if ctx.Err() != nil {
				return res, nil
			}
			res.Failed++
			res.LastError = err.Error()
			if time.Since(lastLog) >= time.Second {
				fmt.Fprintf(logw, "nchan-bridge: %v (%d failed so far)\n", err, res.Failed)
				lastLog = time.Now()
			}
			continue
		}
		res.Forwarded++
	}
}

// publish POSTs one message to Nchan, which answers 201 (delivered to subscribers) or 202
// (queued, none yet).
func publish(ctx context.Context, client *http.Client, target, payload string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(payload)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: status %d", target, resp.StatusCode)
	}
	return nil
}
