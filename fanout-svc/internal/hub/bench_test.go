package hub

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/fanout-svc/internal/epoll"
	"github.com/likes/likes/fanout-svc/internal/posts"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/connecttest"

	"go.uber.org/goleak"
)

// The viewers' client ends live in a child process (this test binary re-run as a sink) because
// one process may hold at most 20,000 descriptors here: 10,000 viewers need 20,000 ends.
const sinkEnv = "LIKES_HUB_BENCH_SINK"

func TestMain(m *testing.M) {
	connecttest.Main() // returns unless this process holds BenchmarkBareConnect's client ends
	if addr := os.Getenv(sinkEnv); addr != "" {
		runSink(addr, os.Getenv(sinkEnv+"_N"))
		return
	}
	if os.Getenv(floorEnv) != "" {
		runFloor()
		return
	}
	goleak.VerifyTestMain(m) // a test that leaves a goroutine running fails the package
}

// runSink connects n viewers to addr and reads and discards everything until stdin closes.
func runSink(addr, nStr string) {
	n, _ := strconv.Atoi(nStr)
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink dial:", err)
			os.Exit(1)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() { // exits when the connection closes
			defer wg.Done()
			_, _ = io.Copy(io.Discard, c)
		}()
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
}

// startSink starts the child process holding n client ends and returns the accepted server ends.
func startSink(b *testing.B, n int) []net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	// With LIKES_HUB_BENCH_SINK_CPU=1 the sink runs on that CPU (taskset), so that the engine can
	// be measured alone on the CPU the benchmark itself was pinned to (taskset -c 0 ...).
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if cpu := os.Getenv(sinkEnv + "_CPU"); cpu != "" {
		cmd = exec.Command("taskset", "-c", cpu, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), sinkEnv+"="+ln.Addr().String(), sinkEnv+"_N="+strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	conns := make([]net.Conn, 0, n)
	for len(conns) < n {
		c, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		b.Fatalf("sink: %q", line)
	}
	return conns
}

// BenchmarkBroadcast measures one update written to N viewers over real loopback sockets: the
// time per update, the time per delivered event, and the allocations per update (the frame is
// encoded once; nothing is allocated per viewer).
func BenchmarkBroadcast(b *testing.B) {
	for _, n := range []int{1, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			h := startHub(b, Config{Loops: 1}, posts.Config{UnsubscribeGrace: time.Hour}, newRecordingSubscriber())
			held, err := h.posts.Acquire(b.Context(), []string{"bench"})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range startSink(b, n) {
				h.Reserve(0)
				_ = h.Add(Viewer{Conn: c, Posts: held, Snapshot: []update.Update{{PostID: "bench"}}})
			}
			stats := h.Stats()
			for stats.FramesSent.Load() < int64(n) {
				time.Sleep(time.Millisecond)
			}
			var ts int64
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				ts++
				want := stats.FramesSent.Load() + int64(n)
				h.Publish(update.Update{PostID: "bench", Count: ts, TS: ts})
				for stats.FramesSent.Load() < want {
					time.Sleep(100 * time.Microsecond) // park: a spinning waiter would take the loop's core
				}
			}
			reportPerEvent(b, n, cpu0)
		})
	}
}

// BenchmarkBareWriteLoop is the floor the engine is measured against: the same frame written
// with one write(2) per socket in a plain loop, nothing else. Compare cpu-ns/event.
func BenchmarkBareWriteLoop(b *testing.B) {
	frame := posts.NewFrame(update.Update{PostID: "bench", Count: 123, TS: 1700000000000000}).Bytes
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("viewers=%d", n), func(b *testing.B) {
			conns := startSink(b, n)
			fds := make([]int, len(conns))
			for i, c := range conns {
				fd, err := epoll.SocketFD(c)
				if err != nil {
					b.Fatal(err)
				}
				fds[i] = fd
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				for _, fd := range fds {
					if _, err := epoll.Write(fd, frame); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportPerEvent(b, n, cpu0)
			for _, c := range conns {
				c.Close()
			}
		})
	}
}

// reportPerEvent reports wall time and this process's CPU time per delivered event.
func reportPerEvent(b *testing.B, n int, cpu0 time.Duration) {
	events := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/events, "cpu-ns/event")
	b.ReportMetric(0, "ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
