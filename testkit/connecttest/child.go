package connecttest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/sseclient"
)

// The child learns what to dial from its environment and what to do from its standard input:
// "open N" or "close N", one command a line, each answered on standard output by "ok" or
// "err TEXT" once done.
const (
	addrEnv    = "LIKES_CONNECTTEST_ADDR"
	requestEnv = "LIKES_CONNECTTEST_REQUEST"
	dialersEnv = "LIKES_CONNECTTEST_DIALERS"
	cpuEnv     = "LIKES_CONNECTTEST_CPU" // run the child on this CPU (taskset), as the hub's sink does
)

// firstFrameTimeout bounds how long the child waits for a stream's first data event: a server
// that never answers fails the benchmark instead of hanging it.
const firstFrameTimeout = 30 * time.Second

// Main runs the child and exits when this process is one Start launched; otherwise it returns at
// once. Call it first in TestMain, or from an init func in a package whose TestMain is not yours.
func Main() {
	addr := os.Getenv(addrEnv)
	if addr == "" {
		return
	}
	dialers, _ := strconv.Atoi(os.Getenv(dialersEnv))
	c := &child{addr: addr, request: []byte(os.Getenv(requestEnv)), dialers: max(dialers, 1)}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, arg, _ := strings.Cut(in.Text(), " ")
		n, _ := strconv.Atoi(arg)
		var err error
		switch verb {
		case "open":
			err = c.open(n)
		case "close":
			c.close(n)
		default:
			err = fmt.Errorf("unknown command %q", verb)
		}
		if err != nil {
			fmt.Println("err", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Println("ok")
	}
	c.close(len(c.conns)) // stdin closed: the benchmark is over
	os.Exit(0)
}

type child struct {
	addr    string
	request []byte
	dialers int

	mu    sync.Mutex
	conns []net.Conn
}

// open opens n streams, c.dialers at a time, and returns once every one of them read its first
// data event, or with the first error.
func (c *child) open(n int) error {
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	errs := make([]error, c.dialers)
	var wg sync.WaitGroup
	for i := range c.dialers {
		wg.Add(1)
		go func() { // exits when next is empty or a dial failed
			defer wg.Done()
			buf := make([]byte, 1024)
			for range next {
				conn, err := c.dial(buf)
				if err != nil {
					errs[i] = err
					return
				}
				c.mu.Lock()
				c.conns = append(c.conns, conn)
				c.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// dial opens one stream and reads it until its first data event (the first frame after the
// preamble), leaving whatever follows unread.
func (c *child) dial(buf []byte) (net.Conn, error) {
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(firstFrameTimeout))
	if _, err := conn.Write(c.request); err != nil {
		conn.Close()
		return nil, err
	}
	var s sseclient.Stream
	got := false
	for !got {
		n, err := conn.Read(buf)
		if n > 0 {
			if ferr := s.Feed(buf[:n], func(e *sse.Event) { got = got || len(e.Data) > 0 }); ferr != nil {
				conn.Close()
				return nil, ferr
			}
		}
		if err != nil && !got {
			conn.Close()
			return nil, fmt.Errorf("before the first frame: %w", err)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// close closes the n streams opened last.
func (c *child) close(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, len(c.conns))
	for _, conn := range c.conns[len(c.conns)-n:] {
		conn.Close()
	}
	c.conns = c.conns[:len(c.conns)-n]
}
