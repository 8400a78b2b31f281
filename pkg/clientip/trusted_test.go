package clientip

import (
	"strings"
	"testing"
)

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

// TestParseTrustedSortsEntries: addresses and CIDRs become prefixes, host names become Names, and
// an entry that is none of them (a mistyped address among them) is refused with a message that
// says what was expected.
func TestParseTrustedSortsEntries(t *testing.T) {
	r, err := ParseTrusted([]string{"10.0.0.1", "fd00::/8", "haproxy", "ingress.ingress-nginx.svc.cluster.local", "lb."}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trusted) != 2 || r.Names == nil || len(r.Names.hosts) != 3 {
		t.Errorf("got %d prefixes and names %v; want 2 and 3", len(r.Trusted), r.Names)
	}
	if r, err := ParseTrusted([]string{"10.0.0.0/8"}, nil); err != nil || r.Names != nil {
		t.Errorf("addresses only: names %v, err %v; want no Names", r.Names, err)
	}
	for _, bad := range []string{"10.0.0.300", "10.0.0.0/33", "-bad-", "a..b", "under_score", "10.0.0", ".", "host:80", strings.Repeat("a", 64)} {
		_, err := ParseTrusted([]string{"10.0.0.0/8", bad}, nil)
		if err == nil {
			t.Errorf("ParseTrusted(%q): no error", bad)
		} else if !strings.Contains(err.Error(), "host name") || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseTrusted(%q): error %q does not name the entry and what it should be", bad, err)
		}
	}
}
