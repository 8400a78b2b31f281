package apicheck

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"

	"github.com/likes/likes/pkg/openapi"
	"github.com/likes/likes/testkit/routes/routestest"
)

// SplitDocumentRoute takes the OpenAPI document's route (openapi.Path) out of a service's routes
// for the manifest checks: both services serve their document at that path, and the Ingresses
// serve both services on one host, so no Ingress can route it to each; haproxy, a port per
// service, routes it (HAProxyRoutesDocument). doc is false when the router has no such route.
func SplitDocumentRoute(routes []routestest.Route) (rest []routestest.Route, doc bool) {
	rest = slices.DeleteFunc(slices.Clone(routes), func(r routestest.Route) bool { return r.Pattern == openapi.Path })
	return rest, len(rest) < len(routes)
}

// HAProxyRoutesDocument checks that haproxy's frontend on svc.Port sends GET openapi.Path to
// svc.Name, when the service serves it (doc), and that it serves it at all.
func HAProxyRoutesDocument(h routestest.HAProxy, svc routestest.Service, doc bool) error {
	if !doc {
		return fmt.Errorf("%s does not route GET %s", svc.Name, openapi.Path)
	}
	b, err := h.Route(svc.Port, http.MethodGet, openapi.Path)
	if err != nil {
		return err
	}
	servers := h.Servers(b)
	if b == "" || len(servers) == 0 {
		return fmt.Errorf("haproxy :%s sends GET %s to no backend; want %s", svc.Port, openapi.Path, svc.Name)
	}
	var errs []error
	for _, s := range servers {
		if host, _, err := net.SplitHostPort(s); err != nil || host != svc.Name {
			errs = append(errs, fmt.Errorf("haproxy :%s sends GET %s to %s; want %s", svc.Port, openapi.Path, s, svc.Name))
		}
	}
	return errors.Join(errs...)
}
