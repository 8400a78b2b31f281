// Command credentials makes a deployment's Redis credentials at its first start: a password for
// every Redis user (pkg/redisacl), the ACL files of the data nodes and the Sentinels, the writers'
// session signing key (session.key, their SESSION_KEY_FILE) and the key that signs loadgen's
// benchmark sessions. Nothing of it is in the repository.
//
//	credentials files -dir /creds                  Docker Compose: a directory per consumer
//	credentials kube -secret likes-redis-credentials   Kubernetes: one Secret, made if missing
//	credentials session-key [-file F [-drop KID]]  a new session key: printed, or added to (or
//	                                               an old one removed from) the key file F
//
// Both are idempotent: what exists is kept (a restarted stack keeps its passwords), what is
// missing is made, and the ACL files are written again from the passwords.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "credentials:", err)
		os.Exit(1)
	}
}
