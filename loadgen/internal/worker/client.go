package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Client is the coordinator's end of one worker: it sends a request and reads its reply.
type Client struct {
	Name string

	mu  sync.Mutex // one request at a time
	enc *json.Encoder
	out *bufio.Scanner
	in  io.Closer
	// wait is called once by Close to reap the worker.
	wait func(timeout time.Duration) error
}

// Start runs `exe args...` (normally the loadgen binary itself with the "worker" command) and
// returns a client connected to its stdin and stdout; its stderr goes to stderr.
func Start(name, exe string, args []string, stderr io.Writer) (*Client, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // exits when the worker process exits
	wait := func(timeout time.Duration) error {
		select {
		case err := <-done:
			return err
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			return errors.Join(errors.New("worker did not exit in time; killed"), <-done)
		}
	}
	return NewClient(name, stdin, stdout, wait), nil
}

// NewClient returns a client over an existing pair of pipes; wait reaps the other end at Close.
func NewClient(name string, in io.WriteCloser, out io.Reader, wait func(time.Duration) error) *Client {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &Client{Name: name, enc: json.NewEncoder(in), out: sc, in: in, wait: wait}
}

// Call sends req and returns the reply, or an error when the worker failed the request or died.
func (c *Client) Call(req Request) (Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(req); err != nil {
		return Reply{}, fmt.Errorf("%s: send %s: %w", c.Name, req.Op, err)
	}
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return Reply{}, fmt.Errorf("%s: read %s reply: %w", c.Name, req.Op, err)
	}
	var rep Reply
	if err := json.Unmarshal(c.out.Bytes(), &rep); err != nil {
		return Reply{}, fmt.Errorf("%s: decode %s reply: %w", c.Name, req.Op, err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("%s: %s: %s", c.Name, req.Op, rep.Error)
	}
	return rep, nil
}

// Close asks the worker to quit, closes its stdin and waits for it (killing it after timeout).
func (c *Client) Close(timeout time.Duration) error {
	done := make(chan struct{})
	go func() { // exits when the quit exchange ends (the worker replies or its pipe breaks)
		_, _ = c.Call(Request{Op: OpQuit})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
	_ = c.in.Close()
	return c.wait(timeout)
}
