// Command healthcheck probes one HTTP URL and exits 0 on a 2xx answer, 1 otherwise. The runtime
// image is distroless (no shell, no curl), so this static helper is what Docker and Compose run as
// a container health check. With no argument it probes /readyz on the port of LISTEN_ADDR, the
// address the service in the same container listens on.
package main
