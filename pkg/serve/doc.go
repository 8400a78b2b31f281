// Package serve holds the HTTP plumbing both services share: a server with timeouts and limits,
// graceful shutdown tied to a context, JSON replies and errors, panic recovery, health endpoints
// and request metrics. Service logic lives in each service's internal packages.
package serve
