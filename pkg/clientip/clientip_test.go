package clientip

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestAddr(t *testing.T) {
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8", "192.168.1.1", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"no proxy", "203.0.113.5:4000", nil, "203.0.113.5"},
		{"untrusted peer's header is ignored", "203.0.113.5:4000", []string{"1.2.3.4"}, "203.0.113.5"},
		{"trusted peer", "10.1.2.3:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"single trusted address", "192.168.1.1:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"client-written hop left of the real one", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"chain of proxies", "10.1.2.3:4000", []string{"198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"two header lines", "10.1.2.3:4000", []string{"6.6.6.6", "198.51.100.7"}, "198.51.100.7"},
		{"trusted peer without header", "10.1.2.3:4000", nil, "10.1.2.3"},
		{"garbage hop stops at the last trusted", "10.1.2.3:4000", []string{"nonsense"}, "10.1.2.3"},
		{"all hops trusted", "10.1.2.3:4000", []string{"10.4.4.4"}, "10.4.4.4"},
		{"ipv6 proxy", "[fd00::1]:4000", []string{"2001:db8::9"}, "2001:db8::9"},
		{"v4-mapped peer", "[::ffff:10.1.2.3]:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"not an address", "@", nil, "invalid IP"},
		{"empty line left of the real one", "10.1.2.3:4000", []string{"", "198.51.100.7"}, "198.51.100.7"},
		{"empty hop stops at the last trusted", "10.1.2.3:4000", []string{"6.6.6.6,, 10.9.9.9"}, "10.9.9.9"},
		{"trailing comma", "10.1.2.3:4000", []string{"198.51.100.7,"}, "10.1.2.3"},
		{"trusted hops across lines", "10.1.2.3:4000", []string{"198.51.100.7, 10.8.8.8", "10.9.9.9"}, "198.51.100.7"},
	}
	c := Resolver{Trusted: trusted}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/session", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := c.Addr(r).String(); got != tt.want {
				t.Errorf("Addr = %s; want %s", got, tt.want)
			}
		})
	}
	r := httptest.NewRequest("POST", "/session", nil)
	r.RemoteAddr = "10.1.2.3:4000"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := (Resolver{}).Addr(r).String(); got != "10.1.2.3" {
		t.Errorf("no trusted proxies: Addr = %s; want the peer", got)
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		give netip.Addr
		want string
	}{
		{netip.MustParseAddr("203.0.113.5"), "203.0.113.5"},
		{netip.MustParseAddr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{netip.Addr{}, "unknown"},
	}
	for _, tt := range tests {
		if got := Source(tt.give); got != tt.want {
			t.Errorf("Source(%v) = %q; want %q", tt.give, got, tt.want)
		}
	}
}

// fromJoined is From as it was first written, joining the X-Forwarded-For lines and splitting them
// into hops: the reference that the allocation-free walk must agree with.
func fromJoined(c Resolver, remote string, forwarded []string) netip.Addr {
	peer := Peer(remote)
	if !c.Trusts(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(forwarded, ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer
		}
		a = a.Unmap()
		if !c.Trusts(a) {
			return a
		}
		peer = a
	}
	return peer
}

// FuzzFromMatchesJoinedList: walking the hops in place gives the client that joining and
// splitting them gives, for up to two header lines.
func FuzzFromMatchesJoinedList(f *testing.F) {
	for _, s := range [][3]string{
		{"10.0.0.1:80", "", ""}, {"10.0.0.1:80", "5.5.5.5", ""}, {"10.0.0.1:80", "5.5.5.5, 10.0.0.2", "10.0.0.3"},
		{"10.0.0.1:80", "garbage, 10.0.0.2", ""}, {"[::1]:80", "::ffff:1.2.3.4", ""}, {"10.0.0.1:80", ",,,", "10.0.0.4"},
		{"nonsense", "1.1.1.1", ""}, {"10.0.0.1:80", "", "10.0.0.3,"}, {"1.2.3.4:5", "10.0.0.3", "1.1.1.1"},
	} {
		f.Add(s[0], s[1], s[2], uint8(2))
	}
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	c := Resolver{Trusted: trusted}
	f.Fuzz(func(t *testing.T, remote, line1, line2 string, lines uint8) {
		forwarded := []string{line1, line2}[:lines%3]
		if got, want := c.From(remote, forwarded), fromJoined(c, remote, forwarded); got != want {
			t.Fatalf("From(%q, %q) = %v; joined and split: %v", remote, forwarded, got, want)
		}
	})
}

// BenchmarkFrom: reading the client behind a chain of trusted proxies allocates nothing; the
// fanout node does it for every viewer it admits under MAX_VIEWERS_PER_IP.
func BenchmarkFrom(b *testing.B) {
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8"})
	if err != nil {
		b.Fatal(err)
	}
	c := Resolver{Trusted: trusted}
	fwd := []string{"6.6.6.6, 198.51.100.7", "10.9.9.9"}
	want := netip.MustParseAddr("198.51.100.7")
	b.ReportAllocs()
	for b.Loop() {
		if c.From("10.1.2.3:4000", fwd) != want {
			b.Fatal("wrong client")
		}
	}
}
