// Package dockertest runs likes as its users do: docker-compose.yml on a real Docker engine,
// built with build/Dockerfile, haproxy with compose/haproxy.cfg in front, scaled, killed,
// partitioned and taken down. Its one test drives the docker CLI (Compose v2 plugin) through
// the steps of a user's first hour and asserts a figure at each.
//
// The engine: the test uses the one that answers; when none does and it runs as root on a
// machine with docker.io installed, it starts dockerd itself and stops it afterwards. When no
// engine answers and none can be started it skips, saying why on stderr.
//
// The images: no registry may be reachable, so the base images come from the Compose variables
// REDIS_IMAGE, HAPROXY_IMAGE, GO_IMAGE and STATIC_IMAGE when set, else from the file that
// `make images-offline` writes (.run/offline/images.env), else the public defaults, which must
// then be present in the engine already.
package dockertest
