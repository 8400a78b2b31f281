package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"text/template"
	"time"

	"github.com/likes/likes/testkit/freeport"
	"github.com/likes/likes/testkit/poll"
)

// Haproxy is a real haproxy (Debian's package) in front of fanout nodes, configured from
// testdata/haproxy.cfg.tmpl, which follows compose/haproxy.cfg.
type Haproxy struct {
	Addr string
	URL  string

	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuffer
}

// StartHaproxy runs haproxy on a free loopback port balancing over servers (host:port) and waits
// until it forwards /healthz. It is stopped when the test ends.
func StartHaproxy(t testing.TB, servers ...string) *Haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy not found on PATH: install it (apt-get install -y haproxy) and rerun")
	}
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "haproxy.cfg.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	f, err := os.Create(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	err = tmpl.Execute(f, struct {
		Listen  string
		Servers []string
	}{addr, servers})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	h := &Haproxy{Addr: addr, URL: "http://" + addr, done: make(chan struct{}), logs: &lockedBuffer{}}
	h.cmd = exec.Command(bin, "-db", "-f", cfgPath)
	h.cmd.Stdout, h.cmd.Stderr = h.logs, h.logs
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	go func() { // exits when haproxy exits
		_ = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", h.logs.Tail(4000))
		}
	})
	poll.Until(t, 10*time.Second, "haproxy to forward /healthz", func() bool {
		select {
		case <-h.done:
			t.Fatalf("haproxy exited at start:\n%s", h.logs.Tail(4000))
		default:
		}
		resp, err := http.Get(h.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return h
}
