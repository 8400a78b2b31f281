// Package freeport finds loopback TCP ports that were free a moment ago, for tests that must tell
// another program which port to listen on (redis-server, haproxy, a service's run). Another process
// may take the port before it is used, so a caller that can listen on ":0" and read the address
// back should do that instead. Every test package of likes uses this one copy.
package freeport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// handedOut is every port this process was given, none of which it is given again: a port freed
// by closing its probe is at once as free as any, and the kernel may well pick it for the next
// probe (two haproxy frontends were once given the same port and, both binding with
// SO_REUSEPORT, shared its connections).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// claim records ports as handed out, unless one of them already was.
func claim(ports ...int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	for _, p := range ports {
		if handedOut.ports[p] {
			return false
		}
	}
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for _, p := range ports {
		handedOut.ports[p] = true
	}
	return true
}

// Port returns a port on 127.0.0.1 that was free a moment ago and that this process was not
// given before.
func Port(t testing.TB) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if claim(port) {
			return port
		}
	}
	t.Fatal("no free port that was not handed out already in 50 tries")
	return 0
}

// Addr returns "127.0.0.1:<port>" for a port that was free a moment ago.
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}

// Pair returns a port p such that p and p+1 were both free on 127.0.0.1, for programs that take
// a base port and use the next one too. It probes below Linux's ephemeral range (32768 and up by
// default): a port the kernel hands out for binding to :0 usually has neighbours taken by
// outgoing connections on a busy machine, so pairs there are rare, while below it only listeners
// hold ports.
func Pair(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := pairLow + rand.IntN(pairHigh-pairLow)
		if free("127.0.0.1", p) && free("127.0.0.1", p+1) && claim(p, p+1) {
			return p
		}
	}
	t.Fatalf("no two consecutive free ports in [%d, %d] in 200 tries", pairLow, pairHigh)
	return 0
}

// The range Pair probes: above the well-known and commonly configured ports, below the ephemeral
// range.
const (
	pairLow  = 20000
	pairHigh = 32000
)

// On returns a port that was free on every one of ips (loopback addresses such as 127.0.0.2), as
// a string, for services that listen on the same port at several addresses.
func On(t testing.TB, ips ...string) string {
	t.Helper()
	if len(ips) == 0 {
		t.Fatal("freeport.On needs at least one address")
	}
	for range 50 {
		ln, err := net.Listen("tcp", net.JoinHostPort(ips[0], "0"))
		if err != nil {
			t.Fatalf("listen on %s: %v", ips[0], err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if freeOnAll(ips[1:], port) && claim(port) {
			return strconv.Itoa(port)
		}
	}
	t.Fatalf("no port free on all of %v in 50 tries", ips)
	return ""
}

func freeOnAll(ips []string, port int) bool {
	for _, ip := range ips {
		if !free(ip, port) {
			return false
		}
	}
	return true
}

// free reports whether port could be listened on at ip just now.
func free(ip string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
