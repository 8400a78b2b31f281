package stream

import (
	"net/http/httptest"
	"testing"

	"github.com/likes/likes/pkg/clientip"
)

func TestPerSourceLimit(t *testing.T) {
	trusted, err := clientip.ParsePrefixes([]string{"10.0.0.0/8", "192.168.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPerSource(2, clientip.Resolver{Trusted: trusted})
	mk := func(remote, xff string) (func(), bool) {
		r := httptest.NewRequest("GET", "/sse/1", nil)
		r.RemoteAddr = remote
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return p.acquire(sourceOf(r))
	}
	rel1, ok1 := mk("1.2.3.4:1000", "")
	_, ok2 := mk("1.2.3.4:1001", "9.9.9.9") // untrusted peer: its X-Forwarded-For is ignored
	_, ok3 := mk("1.2.3.4:1002", "")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("direct client: got %v %v %v; want the third refused", ok1, ok2, ok3)
	}
	rel1()
	rel1() // releasing twice must not free two places
	if _, ok := mk("1.2.3.4:1003", ""); !ok {
		t.Error("place not returned after release")
	}
	if _, ok := mk("1.2.3.4:1004", ""); ok {
		t.Error("double release freed an extra place")
	}
	// Behind a trusted proxy, the client is the first untrusted hop from the right.
	for i := 0; i < 2; i++ {
		if _, ok := mk("10.1.1.1:80", "5.5.5.5, 192.168.1.1"); !ok {
			t.Fatalf("proxied client %d refused", i)
		}
	}
	if _, ok := mk("10.1.1.2:80", "5.5.5.5"); ok {
		t.Error("third proxied stream of 5.5.5.5 admitted; want refused")
	}
	if _, ok := mk("10.1.1.2:80", "6.6.6.6"); !ok {
		t.Error("another client behind the same proxy refused")
	}
	// A client's forged line followed by the proxy's own line: the proxy's line decides.
	r := httptest.NewRequest("GET", "/sse/1", nil)
	r.RemoteAddr = "10.1.1.1:80"
	r.Header.Add("X-Forwarded-For", "7.7.7.7")
	r.Header.Add("X-Forwarded-For", "5.5.5.5")
	if got := p.source(sourceOf(r)).String(); got != "5.5.5.5/32" {
		t.Errorf("two header lines: source %s; want 5.5.5.5/32 (the proxy's line)", got)
	}
}
