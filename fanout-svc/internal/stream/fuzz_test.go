package stream

import (
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/ids"
)

// FuzzParsePosts feeds arbitrary ?posts= lists: a list is accepted only as 1..max distinct valid
// post ids, each of them taken from the input in order.
func FuzzParsePosts(f *testing.F) {
	for _, s := range []string{"", "a", "a,b,c", "a,,b", "a,a,a", ",", "x%00", "ａ", strings.Repeat("p,", 70), strings.Repeat("x", 65)} {
		f.Add(s, 64)
	}
	f.Add("a,b,c,d", 3)
	f.Fuzz(func(t *testing.T, list string, max int) {
		max = max%70 + 1
		if max < 1 {
			max = -max + 1
		}
		posts, err := parsePosts(list, max)
		if err != nil {
			if posts != nil {
				t.Fatalf("error %v with posts %q", err, posts)
			}
			return
		}
		if len(posts) < 1 || len(posts) > max {
			t.Fatalf("%q (max %d): %d posts", list, max, len(posts))
		}
		parts := strings.Split(list, ",")
		next := 0
		for i, p := range posts {
			if err := ids.ValidPostID(p); err != nil {
				t.Fatalf("accepted invalid id %q: %v", p, err)
			}
			if slices.Contains(posts[:i], p) {
				t.Fatalf("duplicate %q in %q", p, posts)
			}
			for next < len(parts) && parts[next] != p {
				next++
			}
			if next == len(parts) {
				t.Fatalf("%q is not in %q, in order", p, list)
			}
		}
	})
}

// FuzzParseEventID feeds arbitrary Last-Event-ID values: an accepted id is a non-negative decimal
// that reads back as the same number; anything else resumes nothing, never errs.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"", "0", "123", "-1", "+7", "007", "9223372036854775807", "9223372036854775808",
		"99999999999999999999", "1e3", " 1", "0x10", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, ok := parseEventID(v)
		if !ok {
			if n != 0 {
				t.Fatalf("%q: rejected with %d", v, n)
			}
			return
		}
		if n < 0 || len(v) > 19 {
			t.Fatalf("%q: accepted as %d", v, n)
		}
		if back, err := strconv.ParseInt(v, 10, 64); err != nil || back != n {
			t.Fatalf("%q: accepted as %d, reads back as %d (%v)", v, n, back, err)
		}
	})
}

// FuzzSourceAddress feeds arbitrary peer addresses and X-Forwarded-For values to the per-address
// limiter (trusting 10.0.0.0/8 and ::1): the address counted is the peer itself unless the peer is
// trusted, and then an address written in the header or the peer; with a limit of one, a second
// stream from the same request is refused until the first is released, and releasing leaves no
// count behind.
func FuzzSourceAddress(f *testing.F) {
	for _, s := range [][2]string{
		{"1.2.3.4:5", ""}, {"10.0.0.1:80", "5.5.5.5"}, {"10.0.0.1:80", "5.5.5.5, 10.0.0.2"},
		{"10.0.0.1:80", "garbage, 10.0.0.2"}, {"[::1]:80", "::ffff:1.2.3.4"}, {"10.0.0.1:80", ",,,"},
		{"nonsense", "1.1.1.1"}, {"10.0.0.1:80", "10.0.0.3,10.0.0.2"}, {"10.0.0.1:80", "fe80::1%eth0"},
	} {
		f.Add(s[0], s[1])
	}
	trusted, err := clientip.ParsePrefixes([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, remote, xff string) {
		if strings.ContainsAny(xff, "\r\n") {
			return // net/http never delivers such a header value
		}
		r := httptest.NewRequest("GET", "/sse/1", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		p := newPerSource(1, clientip.Resolver{Trusted: trusted})
		got := p.clients.From(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		if key := p.source(sourceOf(r)); key != clientip.SourcePrefix(got) {
			t.Fatalf("address %v counted under %v; want %v", got, key, clientip.SourcePrefix(got))
		}
		peer := clientip.Peer(remote)
		if !(clientip.Resolver{Trusted: trusted}).Trusts(peer) {
			if got != peer {
				t.Fatalf("untrusted peer %q with %q counted as %v; want the peer %v", remote, xff, got, peer)
			}
		} else if got != peer && !inHeader(got, xff) {
			t.Fatalf("peer %q with %q counted as %v: neither the peer nor in the header", remote, xff, got)
		}
		release, ok := p.acquire(sourceOf(r))
		if !ok {
			t.Fatal("first stream refused")
		}
		if _, ok := p.acquire(sourceOf(r)); ok {
			t.Fatal("second stream from the same address admitted with a limit of one")
		}
		release()
		release()
		if len(p.counts) != 0 {
			t.Fatalf("counts left after release: %v", p.counts)
		}
	})
}

func inHeader(a netip.Addr, xff string) bool {
	for _, hop := range strings.Split(xff, ",") {
		if h, err := netip.ParseAddr(strings.TrimSpace(hop)); err == nil && h.Unmap() == a {
			return true
		}
	}
	return false
}
