// Package netnstest gives a fault test hosts of their own on one machine: each Host is a network
// namespace with one address on a switch, and a nemesis cuts the links between any two of them,
// both ways or one way, and heals them, as a network partition would, rather than freezing or
// killing a process. A partitioned process goes on answering whoever is on its side, which is what
// a freeze cannot show.
//
// The switch is a bridge in a namespace of its own, so that the machine's own firewall (Docker's
// FORWARD policy, say) never sees the hosts' traffic; the test process itself, in the machine's
// namespace, reaches every host through one more port of the switch (Net.Local). Cuts are
// iptables DROP rules inside the hosts' namespaces: a dropped packet is silence, as on a real
// partition, not a refusal.
//
// It needs root (CAP_NET_ADMIN), iproute2 and iptables; New skips the test without them. It lives
// in the module's internal/: a test kit, not a library.
package netnstest

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Net is a switch and the hosts on it.
type Net struct {
	t      testing.TB
	prefix string // of every namespace and link this Net makes: unique per process and Net
	subnet [3]byte
	sw     string // the switch's namespace

	mu    sync.Mutex
	hosts []*Host
	cuts  map[[2]string]bool // from, to: packets from the first host to the second are dropped
	local netip.Addr
}

// Host is one namespace on the switch.
type Host struct {
	net  *Net
	Name string
	ns   string
	Addr netip.Addr
}

var nets atomic.Int32

// New makes a switch for t, on the subnet 10.<o2>.<o3>.0/24 (each Net of a process takes the next
// one), with the test process on it at .1; t's cleanup removes everything it made.
func New(t testing.TB) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netnstest needs root (CAP_NET_ADMIN)")
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("netnstest needs %s: %v", tool, err)
		}
	}
	i := nets.Add(1)
	pid := os.Getpid()
	n := &Net{t: t, prefix: fmt.Sprintf("lk%d%c", pid%100000, 'a'+i%26),
		subnet: [3]byte{10, byte(200 + pid%50), byte(i)}, cuts: map[[2]string]bool{}}
	n.sw = n.prefix + "sw"
	t.Cleanup(n.remove)
	n.run("ip", "netns", "add", n.sw)
	n.run("ip", "-n", n.sw, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", n.sw, "link", "set", "br0", "up")
	// The test process's own port: a veth from the machine's namespace into the switch.
	local := n.prefix + "l"
	n.local = n.addr(1)
	n.run("ip", "link", "add", local, "type", "veth", "peer", "name", local+"p", "netns", n.sw)
	n.run("ip", "-n", n.sw, "link", "set", local+"p", "master", "br0", "up")
	n.run("ip", "addr", "add", n.local.String()+"/24", "dev", local)
	n.run("ip", "link", "set", local, "up")
	return n
}

func (n *Net) addr(host byte) netip.Addr {
	return netip.AddrFrom4([4]byte{n.subnet[0], n.subnet[1], n.subnet[2], host})
}

// Local is the test process's address on the switch.
func (n *Net) Local() netip.Addr { return n.local }

// Host adds a host named name (for messages and cuts) to the switch.
func (n *Net) Host(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	h := &Host{net: n, Name: name, ns: fmt.Sprintf("%sh%d", n.prefix, len(n.hosts)), Addr: n.addr(byte(10 + len(n.hosts)))}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	veth := h.ns + "v"
	n.run("ip", "netns", "add", h.ns)
	n.run("ip", "-n", h.ns, "link", "set", "lo", "up")
	n.run("ip", "-n", h.ns, "link", "add", "eth0", "type", "veth", "peer", "name", veth, "netns", n.sw)
	n.run("ip", "-n", n.sw, "link", "set", veth, "master", "br0", "up")
	n.run("ip", "-n", h.ns, "addr", "add", h.Addr.String()+"/24", "dev", "eth0")
	n.run("ip", "-n", h.ns, "link", "set", "eth0", "up")
	return h
}

// Command is name with args, to run inside h's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// HostPort is h's address with port, as a dialer wants it.
func (h *Host) HostPort(port int) string { return netip.AddrPortFrom(h.Addr, uint16(port)).String() }

// CutOneWay drops every packet from a to b (a TCP connection between them then stalls both
// ways, as its acknowledgements are lost, but a datagram from b still reaches a).
func (n *Net) CutOneWay(a, b *Host) {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cuts[[2]string{a.ns, b.ns}] {
		return
	}
	n.cuts[[2]string{a.ns, b.ns}] = true
	n.run("ip", "netns", "exec", a.ns, "iptables", "-w", "-A", "OUTPUT", "-d", b.Addr.String(), "-j", "DROP")
}

// Cut drops every packet between a and b, both ways.
func (n *Net) Cut(a, b *Host) {
	n.t.Helper()
	n.CutOneWay(a, b)
	n.CutOneWay(b, a)
}

// Partition cuts every link between a host of one side and a host of the other; links within a
// side stay.
func (n *Net) Partition(side, other []*Host) {
	n.t.Helper()
	for _, a := range side {
		for _, b := range other {
			n.Cut(a, b)
		}
	}
}

// Heal restores every link.
func (n *Net) Heal() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.hosts {
		n.run("ip", "netns", "exec", h.ns, "iptables", "-w", "-F", "OUTPUT")
	}
	clear(n.cuts)
}

// run runs a setup command, failing the test with its output if it fails.
func (n *Net) run(name string, args ...string) {
	n.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// remove deletes the hosts, the switch and the test process's port (the veths go with their
// namespaces); it runs at the test's end, also after a failure, and ignores what is already gone.
func (n *Net) remove() {
	n.mu.Lock()
	hosts := n.hosts
	n.mu.Unlock()
	for _, h := range hosts {
		_ = exec.Command("ip", "netns", "del", h.ns).Run()
	}
	_ = exec.Command("ip", "link", "del", n.prefix+"l").Run()
	_ = exec.Command("ip", "netns", "del", n.sw).Run()
}
