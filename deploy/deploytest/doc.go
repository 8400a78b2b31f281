// Package deploytest checks the deployment files that no machine here can run: no Docker engine
// and no Kubernetes cluster exist on the developers' machines or in CI. Its tests load
// docker-compose.yml with the compose-spec loader, read build/Dockerfile and compose/haproxy.cfg,
// decode every Kubernetes manifest under deploy/base into typed objects with strict decoding, and
// hold all of them to what the binaries really accept: each program is built exactly as the
// Dockerfile builds it and asked for its --help, which names the environment variable of every
// flag.
package deploytest
