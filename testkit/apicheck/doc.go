// Package apicheck holds the services to their OpenAPI documents (pkg/openapi) from the client's
// side: Transport is an http.RoundTripper that finds each request's operation in the document of
// the service it was sent to and validates the reply with kin-openapi's openapi3filter (the status
// is documented, the content type is one the status lists, the headers and the body match their
// schemas; a stream's status and headers only, its body left unread). A reply outside its document,
// or a request to a path the document does not list, is reported to the test that started the
// service. Problems compares a document with a chi router, route by route.
//
// The e2e suite's clients carry a Transport (http.DefaultClient and testkit/clienttest's), and
// e2e.StartProcAt registers each writer-svc and fanout-svc it starts (Serve), so every reply the
// suite gets from a service is checked. Replies from anything else (haproxy, a JWKS server) pass
// unchecked: their address is not registered.
package apicheck
