package main

import (
	"net/http"
	"time"

	"github.com/likes/likes/pkg/serve"
)

// clockGuard refuses writes (any method but GET, HEAD and OPTIONS) with 503 and Retry-After
// while trusted says the offset of Redis' clock is unknown or too uncertain: each runs the like
// script, whose cutoff is sent on Redis' clock through that offset, and with it wrong by more
// than the script's margin a like answered 503 could still be stored later. Reads
// pass: they send no cutoff.
func clockGuard(trusted func() error, retryAfter time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if err := trusted(); err != nil {
					serve.Unavailable(w, retryAfter, "redis clock not measured well enough to write: "+err.Error())
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
