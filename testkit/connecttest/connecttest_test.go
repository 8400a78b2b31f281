package connecttest

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	Main()                   // returns unless this process is the child of a test below
	goleak.VerifyTestMain(m) // a test that leaves a goroutine running fails the package
}

// TestOpenWaitsForTheFirstFrameAndCloseCloses: Open returns once every stream read a data
// event (the server answers each request with a head, a retry hint and one frame), and Close
// closes the streams it names, which the server sees as EOF.
func TestOpenWaitsForTheFirstFrameAndCloseCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	eofs := make(chan struct{}, 8)
	wg.Add(1)
	go func() { // exits when the listener closes
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { // exits when the client closes the stream
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for line, err := r.ReadString('\n'); line != "\r\n"; line, err = r.ReadString('\n') {
					if err != nil {
						return
					}
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nretry: 1000\n\nid: 1\nevent: count\ndata: {}\n\n")
				_, _ = io.Copy(io.Discard, r)
				eofs <- struct{}{}
			}()
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()

	d := Start(t, ln.Addr().String(), "GET /sse/x HTTP/1.1\r\nHost: x\r\n\r\n", 2)
	if err := d.Open(5); err != nil {
		t.Fatal(err)
	}
	if d.Streams() != 5 {
		t.Fatalf("Streams() = %d after Open(5)", d.Streams())
	}
	if err := d.Close(3); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-eofs // the server read EOF on a closed stream
	}
	if d.Streams() != 2 {
		t.Errorf("Streams() = %d after Close(3); want 2", d.Streams())
	}
	if err := d.Close(2); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		<-eofs
	}
}
