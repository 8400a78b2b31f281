// Command pause is the sandbox ("pause") image of the cluster scripts/kube/up.sh starts: the
// process that holds a Pod's namespaces while its containers come and go. The kubelet would pull
// registry.k8s.io/pause, which no registry here serves, so containerd's sandbox_image names a
// local image of this program instead (scripts/kube/images.sh).
//
// It does what the upstream one does: wait for SIGINT or SIGTERM and exit, and, as PID 1 of a
// Pod that shares its process namespace, reap the orphans handed to it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
