// Package routes says which HTTP routes of the likes services the world may reach. The services
// serve everything on one port: the API, the page and the streams next to their health probes,
// their Prometheus metrics and (later) admin endpoints. The balancers in front (the Ingresses of
// deploy/base, compose/haproxy.cfg) must route the first kind and never the second; this package
// is the one place that draws the line, and routestest holds the manifests to it.
package routes
