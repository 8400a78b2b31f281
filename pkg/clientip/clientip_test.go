package clientip

import (
	"net/http/httptest"
	"net/netip"
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

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes([]string{"10.1.2.3/8", "::ffff:192.0.2.1", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.1/32", "2001:db8::/32"}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("prefix %d = %s; want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := ParsePrefixes([]string{bad}); err == nil {
			t.Errorf("ParsePrefixes(%q): no error", bad)
		}
	}
}
