package apicheck

import (
	"context"
	"net/http"
	"sync"
	"testing"
)

// Transport validates every reply from a registered service (Serve) against the service's
// document, and reports a reply outside it to the test that registered the service. Requests to
// any other address pass unchecked.
type Transport struct {
	Base http.RoundTripper // nil: http.DefaultTransport
}

var _ http.RoundTripper = (*Transport)(nil)

// Wrap returns base (nil: http.DefaultTransport) with every reply from a registered service
// validated.
func Wrap(base http.RoundTripper) *Transport { return &Transport{Base: base} }

// RoundTrip sends req through Base and, when req went to a registered service, validates the
// reply before returning it. The body of a non-stream reply is read for that and given back as
// it was; a stream's is never touched.
func (tr *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := tr.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || unchecked(req.Context()) {
		return resp, err
	}
	svc := registered(req.URL.Host)
	if svc == nil {
		return resp, err
	}
	var body []byte
	if !svc.spec.streams(req, resp) {
		body = readBody(resp)
	}
	if cerr := svc.spec.Check(req, resp, body); cerr != nil {
		svc.report("%s %s -> %d %s (body %q): not as %s's OpenAPI document says (pkg/openapi): %v",
			req.Method, req.URL.RequestURI(), resp.StatusCode, resp.Header.Get("Content-Type"), prefix(body), svc.spec.Name, cerr)
	}
	return resp, nil
}

// service is one registered address: its document and the test that reports for it.
type service struct {
	spec *Spec
	t    testing.TB

	mu   sync.Mutex
	done bool // the test ended: nothing more is reported to it
}

func (s *service) report(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.t.Errorf(format, args...)
	}
}

var (
	servicesMu sync.Mutex
	services   = map[string]*service{} // by host:port
)

// Serve registers addr (host:port) as serving spec until t ends: Transport validates every reply
// from it, and a violation fails t. A later registration of the same address (a restart under
// another test) replaces it.
func Serve(t testing.TB, addr string, spec *Spec) {
	s := &service{spec: spec, t: t}
	servicesMu.Lock()
	services[addr] = s
	servicesMu.Unlock()
	t.Cleanup(func() {
		s.mu.Lock()
		s.done = true
		s.mu.Unlock()
		servicesMu.Lock()
		if services[addr] == s {
			delete(services, addr)
		}
		servicesMu.Unlock()
	})
}

func registered(addr string) *service {
	servicesMu.Lock()
	defer servicesMu.Unlock()
	return services[addr]
}

type uncheckedKey struct{}

// Unchecked returns ctx for a request whose reply a test expects to be outside the document on
// purpose (a path no service serves, a malformed request the router never sees): Transport
// passes it unchecked.
func Unchecked(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncheckedKey{}, true)
}

func unchecked(ctx context.Context) bool {
	v, _ := ctx.Value(uncheckedKey{}).(bool)
	return v
}

// CloseIdleConnections closes Base's idle connections, so http.Client.CloseIdleConnections
// reaches them through the wrapper.
func (tr *Transport) CloseIdleConnections() {
	base := tr.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
