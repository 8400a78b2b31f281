package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/likes/likes/loadgen/internal/nchan"
	"github.com/likes/likes/loadgen/internal/nodemetrics"
	"github.com/likes/likes/pkg/envflag"
	"github.com/likes/likes/pkg/rediskeys"
)

// runNchanBridge forwards every count the writer PUBLISHes on Redis to Nchan's publisher, so that
// Nchan serves the same events as fanout-svc in the side-by-side benchmark (docs/BENCHMARKS.md).
func runNchanBridge(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg nchan.BridgeConfig
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
	res, err := nchan.Bridge(ctx, cfg, func(pattern string) {
		fmt.Fprintf(stderr, "nchan-bridge: PSUBSCRIBE %s on %s -> POST %s/<post>\n", pattern, cfg.Redis, cfg.Publisher)
	}, stderr)
	if encErr := json.NewEncoder(stdout).Encode(res); encErr != nil {
		err = errors.Join(err, encErr)
	}
	return err
}

// runProcMetrics serves, in Prometheus text format, the CPU time and memory of a process and its
// children (nginx's master and workers) read from /proc, under the names a fanout node exports, so
// that `loadgen ramp` measures a server without /metrics (Nchan) as it measures fanout-svc.
func runProcMetrics(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg nchan.ProcConfig
	s := envflag.New("loadgen procmetrics", getenv, stderr)
	s.String(&cfg.Listen, "listen", "LOADGEN_PROCMETRICS_LISTEN", "127.0.0.1:9187", "address to serve /metrics on")
	s.String(&cfg.PIDFile, "pidfile", "LOADGEN_PROCMETRICS_PIDFILE", "", "file holding the pid of the process to measure, with its children (e.g. nginx.pid)")
	s.String(&cfg.Status, "status", "LOADGEN_PROCMETRICS_STATUS", "",
		"Nchan stub status URL (nchan_stub_status): its `subscribers:` line becomes the "+nodemetrics.Viewers+" gauge")
	if err := s.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if cfg.PIDFile == "" {
		return errors.New("procmetrics needs --pidfile")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "procmetrics: serving %s/metrics for the processes of %s\n", ln.Addr(), cfg.PIDFile)
	return nchan.ServeProcMetrics(ctx, ln, cfg)
}
