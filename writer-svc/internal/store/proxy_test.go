package store_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy between a Redis client and a real redis-server, for the faults that live
// on the wire: it can hold what clients send (a command delayed on its way, delivered later even
// if its client has given up and closed), and cut a connection in place of forwarding Redis'
// next reply (a reply lost after Redis ran the command). It is not a Redis mock: every byte it
// forwards is the real server's.
type proxy struct {
	Addr   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and two pumps per connection

	mu      sync.Mutex
	closed  bool
	conns   []net.Conn
	held    []byte        // what clients sent while holding
	release chan struct{} // nil unless holding; closed by unhold
	cut     chan struct{} // non-nil while a reply is to be cut; closed when it was
}

// startProxy listens on a loopback port and forwards every connection to target. It stops at
// the end of the test.
func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Add(1)
	go p.accept() // exits when the listener is closed
	t.Cleanup(p.close)
	return p
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.conns = append(p.conns, client, server)
			p.wg.Add(2) // under the lock that close takes before it waits
		}
		p.mu.Unlock()
		if closed {
			_ = client.Close()
			_ = server.Close()
			return
		}
		go p.toServer(client, server) // exits when the client closes or the proxy stops
		go p.toClient(server, client) // exits when the server closes or the proxy stops
	}
}

// toServer forwards client to server; while holding, each chunk waits for unhold first. When
// the client closes, what it sent is still delivered, then the server sees the close: a command
// that was on the wire when its client gave up.
func (p *proxy) toServer(client, server net.Conn) {
	defer p.wg.Done()
	defer func() { _ = server.(*net.TCPConn).CloseWrite() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			release := p.release
			if release != nil {
				p.held = append(p.held, buf[:n]...)
			}
			p.mu.Unlock()
			if release != nil {
				<-release
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// toClient forwards server to client, or, once after cutNextReply, drops a reply and closes both
// sides.
func (p *proxy) toClient(server, client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			p.cut = nil
			p.mu.Unlock()
			if cut != nil {
				_ = server.Close()
				close(cut)
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold keeps everything clients send from here on, until unhold.
func (p *proxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release = make(chan struct{})
}

// unhold delivers what was held, and forwards as usual again.
func (p *proxy) unhold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.release != nil {
		close(p.release)
		p.release = nil
	}
}

// holds reports whether the bytes held so far contain s.
func (p *proxy) holds(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(bytes.ToLower(p.held), []byte(s))
}

// cutNextReply makes the proxy drop the next bytes Redis sends, on any connection, and close that
// connection instead. The channel it returns is closed once it has.
func (p *proxy) cutNextReply() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = make(chan struct{})
	return p.cut
}

// close stops the proxy and waits for its goroutines.
func (p *proxy) close() {
	p.unhold()
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
