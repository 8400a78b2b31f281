package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// JSON writes v as a JSON reply with status.
func JSON(w http.ResponseWriter, status int, v any) {
	writeJSONHeader(w, status)
	_ = json.NewEncoder(w).Encode(v)
}

// RawJSON writes body, JSON its caller encoded, as a reply with status: for a hot path that
// appends its few fields instead of paying for reflection.
func RawJSON(w http.ResponseWriter, status int, body []byte) {
	writeJSONHeader(w, status)
	_, _ = w.Write(body)
}

func writeJSONHeader(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
}

// ErrorBody is the shape of every error reply.
type ErrorBody struct {
	Error string `json:"error"`
}

// Error writes {"error": msg} with status.
func Error(w http.ResponseWriter, status int, msg string) {
	JSON(w, status, ErrorBody{Error: msg})
}

// Unavailable writes a 503 with Retry-After, for a dependency that is down or a node that is full.
func Unavailable(w http.ResponseWriter, retryAfter time.Duration, msg string) {
	UnavailableBody(w, retryAfter, ErrorBody{Error: msg})
}

// UnavailableBody is Unavailable with a body of its own, for a 503 that says more than its error
// (writerapi.Unconfirmed).
func UnavailableBody(w http.ResponseWriter, retryAfter time.Duration, body any) {
	secs := int(retryAfter.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	JSON(w, http.StatusServiceUnavailable, body)
}

// NotFound and MethodNotAllowed answer unknown routes in JSON, as every other error is.
func NotFound(w http.ResponseWriter, _ *http.Request) {
	Error(w, http.StatusNotFound, "not found")
}

// MethodNotAllowed answers a known path with the wrong method.
func MethodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	Error(w, http.StatusMethodNotAllowed, "method not allowed")
}
