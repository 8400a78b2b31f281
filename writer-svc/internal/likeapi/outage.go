package likeapi

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// outage logs storage failures once per outage, not once per request: while Redis is down every
// request fails, and a line each would bury the log (and cost the writer) exactly when an
// operator reads it. The first failure after a success logs a warning with its error; the first
// success after failures logs how many requests failed and for how long. Requests are counted,
// not logged, in between (and in Metrics.RedisErrors).
type outage struct {
	log     *zap.Logger
	failing atomic.Bool // read without the lock by every success

	mu     sync.Mutex
	failed int64     // requests failed since the outage began
	since  time.Time // when it began
}

// fail records a request that storage failed.
func (o *outage) fail(r *http.Request, err error) {
	o.mu.Lock()
	o.failed++
	began := !o.failing.Load()
	if began {
		o.failing.Store(true)
		o.since = time.Now()
	}
	o.mu.Unlock()
	if began { // logged after the lock: collect under it, act after it
		o.log.Warn("storage failing: answering 503 until it recovers", zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.NamedError("context", r.Context().Err()), zap.Error(err))
	}
}

// ok records a request that storage served; it costs one atomic load unless an outage ends.
func (o *outage) ok() {
	if !o.failing.Load() {
		return
	}
	o.mu.Lock()
	ended := o.failing.Load()
	failed, since := o.failed, o.since
	if ended {
		o.failing.Store(false)
		o.failed = 0
	}
	o.mu.Unlock()
	if ended {
		o.log.Info("storage recovered", zap.Int64("failed_requests", failed),
			zap.Duration("lasted", time.Since(since).Round(time.Millisecond)))
	}
}
