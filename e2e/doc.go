// Package e2e runs likes as a user does: real writer-svc and fanout-svc binaries, built once per
// test run, as separate processes on loopback, against a real redis-server. Its tests prove the
// contract across process boundaries (pub/sub, reconnects, crashes), which in-process tests cannot.
package e2e
