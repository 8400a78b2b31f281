package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/likes/likes/pkg/envflag"
)

// Options are the listener and the limits of one HTTP server.
type Options struct {
	Listen            string
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration // 0 for servers that stream; streams must not time out
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ShutdownTimeout   time.Duration
}

// Register defines the listener and timeout flags, with defaultListen as the address.
func (o *Options) Register(s *envflag.Set, defaultListen string) {
	s.String(&o.Listen, "listen", "LISTEN_ADDR", defaultListen, "HTTP listen address")
	s.Duration(&o.ReadHeaderTimeout, "read-header-timeout", "READ_HEADER_TIMEOUT", 5*time.Second, "time allowed to send request headers (slowloris bound)")
	s.Duration(&o.IdleTimeout, "idle-timeout", "IDLE_TIMEOUT", 60*time.Second, "keep-alive idle timeout")
	s.Int(&o.MaxHeaderBytes, "max-header-bytes", "MAX_HEADER_BYTES", 16<<10, "largest request header accepted (431 beyond)")
	s.Duration(&o.ShutdownTimeout, "shutdown-timeout", "SHUTDOWN_TIMEOUT", 10*time.Second, "time allowed for in-flight requests at shutdown")
}

// NewServer returns an http.Server with o's timeouts and limits.
func NewServer(o Options, h http.Handler, log *zap.Logger) *http.Server {
	return &http.Server{
		Addr:              o.Listen,
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
}

// Listen opens the server's TCP listener.
func Listen(o Options) (net.Listener, error) {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	return ln, nil
}

// Serve serves on ln until ctx is done, then shuts down gracefully within timeout. It returns nil
// after a clean shutdown.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // exits when Shutdown closes the listener
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
