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
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/sessiontoken"
)

// run starts writer-svc and serves until ctx is done or SIGINT/SIGTERM arrives, then lets
// in-flight requests finish (up to the shutdown timeout) and returns nil.
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
	log, err := logging.New("writer-svc", cfg.LogLevel, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	runtimelimits.Apply(log)

	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.close()

	ln, err := serve.Listen(cfg.Serve)
	if err != nil {
		return err
	}
	srv := serve.NewServer(cfg.Serve, a.handler, log)
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.Bool("cluster", cfg.Redis.Cluster()),
		zap.String("redis_mode", cfg.Redis.Mode()), zap.String("identity", cfg.Auth.Mode()), zap.Bool("sessions", cfg.Session.Enabled),
		zap.String("session_keys", cfg.Session.KeySource()),
		zap.Stringer("like_rate", cfg.LikeRate), zap.Bool("like_rate_per_post", cfg.LikeRatePerPost), zap.Stringer("like_addr_rate", cfg.LikeAddrRate),
		zap.Stringer("read_addr_rate", cfg.ReadAddrRate))
	if cfg.Session.Enabled && cfg.Session.KeySource() == "redis" {
		log.Warn("session keys in Redis: anyone with the writer's Redis rights can sign sessions; set SESSION_KEY_FILE")
	}
	if cfg.Session.BenchSecret != nil {
		log.Warn("benchmark mode: session tokens signed with BENCH_SESSION_KEY_FILE's key are accepted for users " +
			sessiontoken.BenchUserPrefix + "...; turn it off (unset it) outside load tests")
	}
	err = serve.Serve(ctx, srv, ln, cfg.Serve.ShutdownTimeout)
	log.Info("stopped", zap.Error(err))
	return err
}
