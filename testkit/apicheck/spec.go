package apicheck

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/likes/likes/pkg/openapi"
)

// Spec is one service's document, ready to find a request's operation.
type Spec struct {
	Name   string
	Doc    *openapi3.T
	router routers.Router
}

// Load reads and validates an OpenAPI document (kin-openapi's OpenAPI 3.1 rules).
func Load(name string, doc []byte) (*Spec, error) {
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: load: %w", name, err)
	}
	if err := d.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s: validate: %w", name, err)
	}
	r, err := legacy.NewRouter(d) // no servers in the document: it matches the path on any host
	if err != nil {
		return nil, fmt.Errorf("%s: router: %w", name, err)
	}
	return &Spec{Name: name, Doc: d, router: r}, nil
}

var (
	loadOnce       sync.Once
	writer, fanout *Spec
	loadErr        error
)

// Writer and Fanout are the services' documents (pkg/openapi). pkg/openapi's tests validate them,
// so a failure to load here is a broken build: they panic.
func Writer() *Spec { load(); return writer }

// Fanout is fanout-svc's document.
func Fanout() *Spec { load(); return fanout }

// ForService returns the document of the service named as e2e and compose name it ("writer-svc",
// "fanout-svc"), or nil.
func ForService(name string) *Spec {
	switch name {
	case "writer-svc":
		return Writer()
	case "fanout-svc":
		return Fanout()
	}
	return nil
}

func load() {
	loadOnce.Do(func() {
		if writer, loadErr = Load("writer-svc", openapi.Writer()); loadErr == nil {
			fanout, loadErr = Load("fanout-svc", openapi.Fanout())
		}
	})
	if loadErr != nil {
		panic(loadErr)
	}
}

// The services answer with media types kin-openapi has no body decoder for; their bodies are
// text, held to a string schema.
func init() {
	for _, ct := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml", "application/openmetrics-text"} {
		openapi3filter.RegisterBodyDecoder(ct, func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		})
	}
}
