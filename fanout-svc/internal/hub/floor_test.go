package hub

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/connecttest"
)

// floorEnv turns this test binary into the floor server: the bare write loop as a process that
// scripts/ramp.sh can run in place of fanout-svc (FANOUT_BIN), so that loadgen drives both with
// the same viewers, likes and measurements. It reads LISTEN_ADDR and REDIS_URL as fanout-svc does.
//
// The floor does the least a node must: one SUBSCRIBE per post, the frame encoded once per update,
// then one write(2) of it per viewer in a plain loop on the pub/sub goroutine. No epoll, no
// batching, no heartbeats, no slow-viewer handling (what does not fit in a socket is dropped), no
// drain. GET /sse/{post} (one post per stream), /healthz and /metrics (process CPU and memory, the
// viewers gauge) are all it serves.
const floorEnv = "LIKES_HUB_FLOOR"

func runFloor() {
	if err := floor(os.Getenv("LISTEN_ADDR"), os.Getenv("REDIS_URL")); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

type floorServer struct {
	rdb     *redis.Client
	ps      *redis.PubSub
	keys    rediskeys.Scheme
	viewers atomic.Int64
	stats   floorStats

	mu         sync.Mutex
	posts      map[string][]int // post -> viewer sockets
	subscribed map[string]bool  // posts whose SUBSCRIBE succeeded
}

func floor(addr, url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	f := &floorServer{rdb: rdb, ps: rdb.Subscribe(context.Background()), keys: rediskeys.New(""), posts: map[string][]int{},
		subscribed: map[string]bool{}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "likes_fanout_viewers", Help: "Connected viewers."},
		func() float64 { return float64(f.viewers.Load()) }))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/sse/{post}", f.serve)
	// No TCP keep-alive, as fanout-svc's listener (fanout-svc/listen.go). net's default probes every
	// idle socket each 15 s: at a million on this machine the kernel timed out most viewers' sockets
	// on unanswered probes (the floor's writes failed with ETIMEDOUT) while the clients, told
	// nothing, held them open, and the floor delivered 12% of the frames.
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	go f.receive()             // runs until the process is killed
	go f.stats.log(&f.viewers) // as does this
	return (&http.Server{Handler: mux}).Serve(ln)
}

func (f *floorServer) serve(w http.ResponseWriter, r *http.Request) {
	post := r.PathValue("post")
	if ids.ValidPostID(post) != nil {
		http.Error(w, "bad post", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	subscribed := f.subscribed[post]
	f.mu.Unlock()
	if !subscribed {
		// The post's one subscription, on a context of the server's, not of the viewer who came
		// first: a viewer that gives up (a million connecting on one core) must not leave the post
		// unsubscribed for every later one. Until one SUBSCRIBE succeeds, each viewer tries
		// (Redis and go-redis take a channel subscribed twice as once).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := f.ps.Subscribe(ctx, f.keys.Channel(post))
		cancel()
		f.stats.subscribes.Add(1)
		if err != nil {
			f.stats.subscribeErrs.Add(1)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		f.mu.Lock()
		f.subscribed[post] = true
		f.mu.Unlock()
	}
	vals, err := f.rdb.MGet(r.Context(), f.keys.Count(post), f.keys.Version(post)).Result()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	u := update.Update{PostID: post}
	if s, ok := vals[0].(string); ok {
		_, _ = fmt.Sscan(s, &u.Count)
	}
	if s, ok := vals[1].(string); ok {
		_, _ = fmt.Sscan(s, &u.TS)
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fd, err := epoll.SocketFD(conn)
	if err != nil {
		_ = conn.Close()
		return
	}
	_, _ = epoll.Write(fd, append([]byte(floorHead), posts.NewFrame(u).Bytes...))
	f.mu.Lock()
	f.posts[post] = append(f.posts[post], fd)
	f.mu.Unlock()
	f.viewers.Add(1)
	floorConns.Store(fd, conn) // keeps the descriptor open for the life of the process
}

// floorStats counts what the floor did with each update, logged to stderr every 10 s while it
// changes: a floor that delivers less than the node must say why (not subscribed, a socket full).
type floorStats struct {
	subscribes, subscribeErrs, receiveErrs, messages, unwatched atomic.Int64
	written, full, partial, writeErrs, failedFDs                atomic.Int64
	lastErr                                                     atomic.Value
}

func (s *floorStats) log(viewers *atomic.Int64) {
	var last string
	for range time.Tick(10 * time.Second) {
		line := fmt.Sprintf("floor: subscribes %d (errors %d), messages %d (unwatched %d, receive errors %d %v), writes %d, full %d, partial %d, errors %d on %d sockets of %d",
			s.subscribes.Load(), s.subscribeErrs.Load(), s.messages.Load(), s.unwatched.Load(), s.receiveErrs.Load(), s.lastErr.Load(),
			s.written.Load(), s.full.Load(), s.partial.Load(), s.writeErrs.Load(), s.failedFDs.Load(), viewers.Load())
		if line != last {
			fmt.Fprintln(os.Stderr, time.Now().Format(time.TimeOnly), line)
			last = line
		}
	}
}

// floorHead is the floor's response head and retry hint, the same bytes for every viewer.
const floorHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\nretry: 2000\n\n"

var floorConns sync.Map

// receive is the bare loop: for each update, one write of the shared frame per viewer.
func (f *floorServer) receive() {
	ctx := context.Background()
	failed := map[int]bool{}
	for {
		msg, err := f.ps.ReceiveMessage(ctx)
		if err != nil {
			f.stats.receiveErrs.Add(1)
			f.stats.lastErr.Store(err.Error())
			continue
		}
		f.stats.messages.Add(1)
		u, err := update.Parse([]byte(msg.Payload))
		if err != nil {
			continue
		}
		frame := sse.AppendEvent(nil, sse.AppendIntID(nil, u.Count), sse.EventCount, u.AppendJSON(nil))
		f.mu.Lock()
		fds := f.posts[strings.TrimSpace(u.PostID)]
		f.mu.Unlock()
		if len(fds) == 0 {
			f.stats.unwatched.Add(1)
		}
		for _, fd := range fds {
			n, err := epoll.Write(fd, frame)
			switch {
			case err != nil:
				f.stats.writeErrs.Add(1)
				f.stats.lastErr.Store("write: " + err.Error())
				failed[fd] = true
				f.stats.failedFDs.Store(int64(len(failed)))
			case n == 0:
				f.stats.full.Add(1)
			case n < len(frame):
				f.stats.partial.Add(1)
			default:
				f.stats.written.Add(1)
			}
		}
	}
}

// bareConnect is the floor of a connect, what BenchmarkConnect (fanout-svc) is measured against:
// accept, read the request until its blank line, one write of a fixed preamble and frame, and the
// connection kept open. One goroutine per connection while it reads, as net/http has; no parsing,
// no routing, no admission, no epoll of ours.
type bareConnect struct {
	ln    net.Listener
	reply []byte
	wg    sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func startBareConnect(b *testing.B) *bareConnect {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	frame := posts.NewFrame(update.Update{PostID: "bench", Count: 123, TS: 1700000000000000}).Bytes
	s := &bareConnect{ln: ln, reply: append([]byte(floorHead), frame...)}
	s.wg.Add(1)
	go func() { // exits when the cleanup closes the listener
		defer s.wg.Done()
		s.accept()
	}()
	b.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
		s.release(len(s.conns))
	})
	return s
}

func (s *bareConnect) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() { // exits once the request is read and answered
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

func (s *bareConnect) serve(c net.Conn) {
	var buf [1024]byte
	n := 0
	for !bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
		m, err := c.Read(buf[n:])
		n += m
		if err != nil || n == len(buf) {
			c.Close()
			return
		}
	}
	if _, err := c.Write(s.reply); err != nil {
		c.Close()
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

// release closes the n connections accepted last.
func (s *bareConnect) release(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns[len(s.conns)-n:] {
		c.Close()
	}
	s.conns = s.conns[:len(s.conns)-n]
}

// BenchmarkBareConnect is the floor of a viewer connect, beside which fanout-svc's
// BenchmarkConnect is read: the CPU this process spends per connection (cpu-µs/connect) while
// viewers connections are held open. The client ends are in a child process (connecttest).
func BenchmarkBareConnect(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			s := startBareConnect(b)
			d := connecttest.Start(b, s.ln.Addr().String(), connectRequest, 8)
			connecttest.Bench(b, d, n, s.release)
		})
	}
}

// connectRequest is what a browser's EventSource sends, less the headers no server reads.
const connectRequest = "GET /sse/bench HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
