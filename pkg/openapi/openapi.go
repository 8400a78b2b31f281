package openapi

import (
	_ "embed"
	"net/http"
)

// Path is where each service serves its document.
const Path = "/openapi.json"

var (
	//go:embed writer.json
	writer []byte
	//go:embed fanout.json
	fanout []byte
)

// Writer returns writer-svc's document. The bytes are shared: read-only.
func Writer() []byte { return writer }

// Fanout returns fanout-svc's document. The bytes are shared: read-only.
func Fanout() []byte { return fanout }

// Handler serves doc as application/json. The document changes only with the binary, so it may be
// cached briefly.
func Handler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(doc)
	})
}
