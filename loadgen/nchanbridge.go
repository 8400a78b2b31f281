package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/envflag"
	"github.com/likes/likes/pkg/rediskeys"
)

// bridgeConfig is what `loadgen nchan-bridge` needs: where the writer publishes and where Nchan's
// publisher location listens.
type bridgeConfig struct {
	Redis     string // host:port
	Publisher string // base URL; a post's channel is Publisher+"/"+post
	Prefix    string // the deployment's REDIS_PREFIX
}

// bridgeResult is printed as JSON when the bridge stops.
type bridgeResult struct {
	Forwarded int64  `json:"forwarded"`
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
}

// runNchanBridge forwards every count the writer PUBLISHes on Redis to Nchan's publisher, so that
// Nchan serves the same events as fanout-svc in the side-by-side benchmark (docs/BENCHMARKS.md).
func runNchanBridge(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg bridgeConfig
	s := envflag.New("loadgen nchan-bridge", getenv, stderr)
	s.String(&cfg.Redis, "redis", "LOADGEN_REDIS", "127.0.0.1:6379", "the writer's Redis, host:port")
	s.String(&cfg.Publisher, "publisher", "LOADGEN_NCHAN_PUBLISHER", "http://127.0.0.1:8088/pub",
		"Nchan publisher base URL: each payload is POSTed to <publisher>/<post>")
	s.String(&cfg.Prefix, "redis-prefix", "LOADGEN_REDIS_PREFIX", rediskeys.DefaultPrefix, "the deployment's REDIS_PREFIX (names the posts' channels)")
	if err := s.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if u, err := url.Parse(cfg.Publisher); err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("--publisher %q: want http://host:port/path", cfg.Publisher)
	}
	res, err := bridge(ctx, cfg, func(pattern string) {
		fmt.Fprintf(stderr, "nchan-bridge: PSUBSCRIBE %s on %s -> POST %s/<post>\n", pattern, cfg.Redis, cfg.Publisher)
	}, stderr)
	if encErr := json.NewEncoder(stdout).Encode(res); encErr != nil {
		err = errors.Join(err, encErr)
	}
	return err
}

// bridge PSUBSCRIBEs to every post's channel and POSTs each payload, unchanged, to the post's
// publisher URL, one at a time and in the order Redis delivered them (so a viewer's counts arrive
// in order), over one keep-alive connection. ready is called once the subscription is confirmed.
// A failed POST is counted and logged (at most once a second) and the next message goes on: at
// the benchmark's few likes a second a retry would only reorder counts. It returns when ctx ends.
func bridge(ctx context.Context, cfg bridgeConfig, ready func(pattern string), logw io.Writer) (bridgeResult, error) {
	var res bridgeResult
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
