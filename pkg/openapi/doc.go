// Package openapi holds the OpenAPI 3.1 documents of writer-svc's and a fanout node's HTTP routes
// and serves them at GET /openapi.json. The documents are written by hand as JSON and embedded, so
// a binary serves the document of its own routes; each service's tests hold its document to its
// router (every routed path documented, every documented operation routed), and the e2e suite
// validates every reply it gets against them (testkit/apicheck).
package openapi
