package freeport

import (
	"net"
	"strconv"
	"testing"
)

// listenable fails t unless addr can be listened on now.
func listenable(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s, just reported free: %v", addr, err)
	}
	_ = ln.Close()
}

func TestAddrIsListenable(t *testing.T) {
	addr := Addr(t)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addr = %q; want 127.0.0.1 and a non-zero port", addr)
	}
	listenable(t, addr)
}

func TestNoPortIsHandedOutTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 2000 {
		p := Port(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	if p := Pair(t); seen[p] || seen[p+1] {
		t.Fatalf("Pair handed out %d, given before", p)
	}
}

func TestPairGivesTwoConsecutivePorts(t *testing.T) {
	p := Pair(t)
	listenable(t, "127.0.0.1:"+strconv.Itoa(p))
	listenable(t, "127.0.0.1:"+strconv.Itoa(p+1))
}

func TestOnIsFreeOnEveryAddress(t *testing.T) {
	ips := []string{"127.0.0.2", "127.0.0.3"}
	port := On(t, ips...)
	for _, ip := range ips {
		listenable(t, net.JoinHostPort(ip, port))
	}
}

func TestTakenPortIsNotFree(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if free("127.0.0.1", ln.Addr().(*net.TCPAddr).Port) {
		t.Errorf("a port with a listener on it is reported free")
	}
}
