package stream

import "net/http"

// A page on another origin reads a stream with EventSource or fetch. The served stream allows
// every origin (responseHead), and so does every refusal of a stream: without the header a full
// node's 503 or an address's 429 reaches such a page as an opaque CORS TypeError, and the client
// cannot tell a refusal from a dead node nor read Retry-After (a non-safelisted header, hence
// Access-Control-Expose-Headers).
const (
	allowOrigin   = "*"
	exposeHeaders = "Retry-After"
)

// refusalCORS is the CORS header lines of a refusal the fast accept path writes raw.
const refusalCORS = "Access-Control-Allow-Origin: " + allowOrigin + "\r\n" +
	"Access-Control-Expose-Headers: " + exposeHeaders + "\r\n"

// AllowCrossOrigin sets the same headers on an answer to a stream request net/http writes (the
// stream routes and the Redis guard in front of them).
func AllowCrossOrigin(h http.Header) {
	h.Set("Access-Control-Allow-Origin", allowOrigin)
	h.Set("Access-Control-Expose-Headers", exposeHeaders)
}
