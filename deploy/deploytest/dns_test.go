package deploytest

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers A queries on a loopback UDP port from a table the test changes, standing in
// for Compose's embedded DNS server: one address per replica of a service.
type dnsServer struct {
	Addr string // host:port

	conn net.PacketConn
	done chan struct{}

	mu    sync.Mutex
	hosts map[string][]netip.Addr // fully qualified lower-case name -> addresses
}

// startDNS serves until the test ends.
func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{Addr: conn.LocalAddr().String(), conn: conn, done: make(chan struct{}), hosts: map[string][]netip.Addr{}}
	go d.serve() // exits when Cleanup closes conn
	t.Cleanup(func() {
		conn.Close()
		<-d.done
	})
	return d
}

// set makes name resolve to addrs (IPv4 literals); no addresses means the name exists but has
// no A record.
func (d *dnsServer) set(name string, addrs ...string) {
	list := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		list[i] = netip.MustParseAddr(a)
	}
	d.mu.Lock()
	d.hosts[strings.ToLower(name)+"."] = list
	d.mu.Unlock()
}

func (d *dnsServer) serve() {
	defer close(d.done)
	buf := make([]byte, 4096)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, ok := d.answer(buf[:n]); ok {
			_, _ = d.conn.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query; malformed queries get none.
func (d *dnsServer) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	d.mu.Lock()
	addrs, known := d.hosts[strings.ToLower(q.Name.String())]
	d.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if q.Type == dnsmessage.TypeA {
		for _, a := range addrs {
			rr := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 1}
			if b.AResource(rr, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil, false
			}
		}
	}
	resp, err := b.Finish()
	return resp, err == nil
}

func TestDNSServerAnswers(t *testing.T) {
	d := startDNS(t)
	d.set("fanout-svc", "127.0.0.4", "127.0.0.5")
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.Addr)
	}}
	got, err := r.LookupHost(context.Background(), "fanout-svc")
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(got)), []string{"127.0.0.4", "127.0.0.5"}) {
		t.Errorf("lookup fanout-svc = %v, %v; want [127.0.0.4 127.0.0.5]", got, err)
	}
	if _, err := r.LookupHost(context.Background(), "nobody"); err == nil {
		t.Errorf("lookup of an unknown name succeeded; want NXDOMAIN")
	}
}
