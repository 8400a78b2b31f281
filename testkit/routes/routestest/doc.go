// Package routestest holds the deployment's routing to the services' own routers. It reads the
// two ways requests reach likes from outside, the Ingresses of deploy/base and the frontends of
// compose/haproxy.cfg, follows a request through each as the balancer would (Kubernetes path
// matching; haproxy's http-request rules, ACLs, use_backend and default_backend), and lists every
// route of a service that they send to the wrong place: a public route (routes.Public) that does
// not reach its service, or an internal one that reaches any service.
//
// The services' tests walk their real routers (Walk) and call Manifests.Problems, so a new
// endpoint cannot be forgotten in a manifest. deploy/deploytest reads haproxy.cfg with the same
// parser.
package routestest
