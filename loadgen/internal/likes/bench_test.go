package likes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/likes/likes/loadgen/internal/procstat"
	"github.com/likes/likes/pkg/writerapi"
)

// cannedWriter is the cheapest server that answers likes as the writer does: it reads each
// request's head and writes a fixed-shape answer with the next count, allocating nothing per like.
// The benchmarks run it as a process of their own, so that the benchmark's CPU and allocations
// are the client's alone.
type cannedWriter struct {
	ln    net.Listener
	count atomic.Int64
	wg    sync.WaitGroup
}

func startCanned(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &cannedWriter{ln: ln}
	s.wg.Go(s.accept) // exits when the listener is closed
	tb.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// cannedEnv, set, makes TestCannedWriterProcess serve.
const cannedEnv = "LIKES_CANNED_WRITER"

// TestCannedWriterProcess is the canned writer's process, started by startCannedProcess: it
// prints its URL and serves until its stdin closes. Otherwise it skips.
func TestCannedWriterProcess(t *testing.T) {
	if os.Getenv(cannedEnv) == "" {
		t.Skip("the benchmarks' canned writer; they start it")
	}
	fmt.Println(startCanned(t))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startCannedProcess runs the canned writer in a child process (this test binary) and returns
// its URL; the child stops when the benchmark ends.
func startCannedProcess(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCannedWriterProcess$")
	cmd.Env = append(os.Environ(), cannedEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("canned writer process: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // exits when the child exits (cmd.Wait closes the pipe)
	return strings.TrimSpace(line)
}

func (s *cannedWriter) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() { s.serve(nc) }) // exits when the client closes the connection
	}
}

func (s *cannedWriter) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	var body, out []byte
	for {
		for { // the request head ends with an empty line; likes have no body
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
		}
		body = writerapi.AppendLikeReply(body[:0], "hot", s.count.Add(1), true)
		out = append(out[:0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(body)), 10)
		out = append(out, "\r\n\r\n"...)
		out = append(out, body...)
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// BenchmarkLike measures a like on the generator's path against a loopback server (the canned
// writer, in a process of its own): ns/op is the wall time per op (one like, or a pipelined batch)
// at that concurrency; cpu-ns/like is the benchmark process's CPU per like, which is the
// client's: the figure to hold against the writer's CPU per like; allocs/op are the client's.
// identity=session is the cost of minting each like's session token on top.
func BenchmarkLike(b *testing.B) {
	for _, bc := range []struct {
		conns, pipeline int
		identity        string
	}{{1, 1, "header"}, {64, 1, "header"}, {64, 8, "header"}, {1, 1, "session"}, {64, 1, "session"}} {
		b.Run(fmt.Sprintf("conns=%d/pipeline=%d/identity=%s", bc.conns, bc.pipeline, bc.identity), func(b *testing.B) {
			opts := []Option{WithPipeline(bc.pipeline)}
			if bc.identity == "session" {
				opts = append(opts, WithSessions(testKeys))
			}
			l := New(startCannedProcess(b), []string{"hot"}, "u", bc.conns, 5*time.Second, opts...)
			defer l.Close()
			b.ReportAllocs()
			cpu := procstat.CPU()
			if bc.conns == 1 {
				c := l.getConn()
				batch := make([]job, bc.pipeline)
				for b.Loop() {
					sendFresh(l, c, batch)
				}
				l.putConn(c)
				reportCPU(b, cpu, l)
				return
			}
			// Each goroutine owns a connection, as in a run: conns goroutines in all.
			b.SetParallelism(max(bc.conns/runtime.GOMAXPROCS(0), 1))
			b.RunParallel(func(pb *testing.PB) {
				c := l.getConn()
				defer l.putConn(c)
				batch := make([]job, bc.pipeline)
				for pb.Next() {
					sendFresh(l, c, batch)
				}
			})
			reportCPU(b, cpu, l)
		})
	}
}

// BenchmarkLikeNetHTTP is the like path as it was, on net/http, against the same server: the
// figure BenchmarkLike is to be compared with.
func BenchmarkLikeNetHTTP(b *testing.B) {
	url := startCannedProcess(b)
	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1))
	cpu := procstat.CPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := netHTTPLike(client, url+"/like/hot", "u"+strconv.FormatInt(seq.Add(1), 36)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(procstat.CPU()-cpu)/float64(b.N), "cpu-ns/like")
}

func netHTTPLike(client *http.Client, url, user string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-User-ID", user)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var a writerapi.LikeReply
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&a); err != nil || !a.Liked {
		return errors.Join(err, errors.New("not liked"))
	}
	return nil
}

// sendFresh sends a batch of likes as the closed loop does: jobs with no start time.
func sendFresh(l *Load, c *conn, batch []job) {
	for i := range batch {
		batch[i] = job{}
	}
	l.send(context.Background(), c, batch)
}

func reportCPU(b *testing.B, since time.Duration, l *Load) {
	acked, errs, _ := l.Recorder().Totals()
	if errs != 0 {
		b.Fatalf("%d errors (last %q)", errs, l.Recorder().LastError())
	}
	b.ReportMetric(float64(procstat.CPU()-since)/float64(acked), "cpu-ns/like")
}
