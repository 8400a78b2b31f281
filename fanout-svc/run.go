package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/likes/likes/pkg/logging"
	"github.com/likes/likes/pkg/runtimelimits"
)

// run starts a fanout node and serves until ctx is done or SIGINT/SIGTERM arrives, then drains
// its viewers over the drain window (node.Serve) and returns.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := loadConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log, err := logging.New("fanout-svc", cfg.LogLevel, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	raiseFileLimit(log)
	runtimelimits.Apply(log)

	n, err := newNode(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer n.Close()
	n.Start()
	ln, err := n.Listen()
	if err != nil {
		return err
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.Int("loops", n.hub.Loops()),
		zap.Int("max_conns", cfg.Stream.MaxConns), zap.Duration("flush_window", cfg.Hub.FlushWindow),
		zap.Float64("post_rate", cfg.Hub.PostRate), zap.Float64("display_budget", cfg.Hub.DisplayBudget), zap.Bool("cluster", cfg.Redis.Cluster()),
		zap.String("redis_mode", cfg.Redis.Mode()))
	err = n.Serve(ctx, ln)
	log.Info("stopped", zap.Error(err))
	return err
}
