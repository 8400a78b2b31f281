//go:build !linux

package epoll

// The fan-out engine runs on epoll and eventfd, which only Linux has. Building fanout-svc for
// another system stops here with "undefined: fanoutSvcNeedsLinuxEpoll"; build with GOOS=linux
// (or run it in a container).
var _ = fanoutSvcNeedsLinuxEpoll
