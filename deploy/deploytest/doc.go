// Package deploytest checks the deployment files without running them (deploy/dockertest runs
// the compose stack on a real engine; no Kubernetes cluster can run here). Its tests load
// docker-compose.yml with the compose-spec loader, read build/Dockerfile and compose/haproxy.cfg,
// decode every Kubernetes manifest under deploy/base into typed objects with strict decoding, and
// hold all of them to what the binaries really accept: each program is built exactly as the
// Dockerfile builds it and asked for its --help, which names the environment variable of every
// flag.
package deploytest
