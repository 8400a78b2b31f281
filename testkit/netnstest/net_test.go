package netnstest

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
)

// ping sends PING to the Redis at addr from the test process and returns its reply line ("+PONG");
// "" when nothing answers within 1 s.
func ping(addr string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return ""
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// pingFrom sends PING to the Redis at addr from inside h; "" when nothing answers within 1 s.
func pingFrom(h *Host, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	out, _ := h.Command("timeout", "1", "redis-cli", "-h", host, "-p", port, "PING").Output()
	return strings.TrimSpace(string(out))
}

// TestCutsAndHeals: a Redis on host a answers b and the test process; a cut between a and b
// silences it for b only; a one-way cut from b to a does too; Heal restores both.
func TestCutsAndHeals(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs redis-server")
	}
	n := New(t)
	a, b := n.Host("a"), n.Host("b")
	srv := a.Command("redis-server", "--bind", a.Addr.String(), "--port", "6379", "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	addr := a.HostPort(6379)
	poll.Until(t, 10*time.Second, "Redis on host a to answer the test process", func() bool { return ping(addr) == "+PONG" })
	if got := pingFrom(b, addr); got != "PONG" {
		t.Fatalf("from b before any cut: %q; want PONG", got)
	}

	n.Cut(a, b)
	if got := pingFrom(b, addr); got != "" {
		t.Errorf("from b across a cut: %q; want silence", got)
	}
	if got := ping(addr); got != "+PONG" {
		t.Errorf("from the test process during a's cut from b: %q; want PONG", got)
	}
	n.Heal()
	poll.Until(t, 10*time.Second, "b to reach a again after Heal", func() bool { return pingFrom(b, addr) == "PONG" })

	n.CutOneWay(b, a)
	if got := pingFrom(b, addr); got != "" {
		t.Errorf("from b with b->a cut: %q; want silence", got)
	}
	n.Heal()
	poll.Until(t, 10*time.Second, "b to reach a again after the one-way cut healed", func() bool { return pingFrom(b, addr) == "PONG" })

	n.Partition([]*Host{a}, []*Host{b})
	if got := pingFrom(b, addr); got != "" {
		t.Errorf("from b across a partition: %q; want silence", got)
	}
	n.Heal()
}
