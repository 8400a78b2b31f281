package hub

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
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

	mu    sync.Mutex
	posts map[string][]int // post -> viewer sockets
}

func floor(addr, url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	f := &floorServer{rdb: rdb, ps: rdb.Subscribe(context.Background()), keys: rediskeys.New(""), posts: map[string][]int{}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "likes_fanout_viewers", Help: "Connected viewers."},
		func() float64 { return float64(f.viewers.Load()) }))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/sse/{post}", f.serve)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go f.receive() // runs until the process is killed
	return (&http.Server{Handler: mux}).Serve(ln)
}

func (f *floorServer) serve(w http.ResponseWriter, r *http.Request) {
	post := r.PathValue("post")
	if ids.ValidPostID(post) != nil {
		http.Error(w, "bad post", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	first := f.posts[post] == nil
	if first {
		f.posts[post] = []int{}
	}
	f.mu.Unlock()
	if first {
		if err := f.ps.Subscribe(r.Context(), f.keys.Channel(post)); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
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
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\nretry: 2000\n\n"
	_, _ = epoll.Write(fd, append([]byte(head), newFrame(u).single...))
	f.mu.Lock()
	f.posts[post] = append(f.posts[post], fd)
	f.mu.Unlock()
	f.viewers.Add(1)
	floorConns.Store(fd, conn) // keeps the descriptor open for the life of the process
}

var floorConns sync.Map

// receive is the bare loop: for each update, one write of the shared frame per viewer.
func (f *floorServer) receive() {
	ctx := context.Background()
	for {
		msg, err := f.ps.ReceiveMessage(ctx)
		if err != nil {
			continue
		}
		u, err := update.Parse([]byte(msg.Payload))
		if err != nil {
			continue
		}
		frame := sse.AppendEvent(nil, sse.AppendIntID(nil, u.Count), sse.EventCount, u.AppendJSON(nil))
		f.mu.Lock()
		fds := f.posts[strings.TrimSpace(u.PostID)]
		f.mu.Unlock()
		for _, fd := range fds {
			_, _ = epoll.Write(fd, frame)
		}
	}
}
