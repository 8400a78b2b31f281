package nchan

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/loadgen/internal/nodemetrics"
	"github.com/likes/likes/pkg/rediskeys"
	"github.com/likes/likes/testkit/redistest"
)

// TestNchanBridgeForwardsPayloadsInOrder: what the writer PUBLISHes on a post's channel reaches
// the publisher at <publisher>/<post>, byte for byte and in order; other channels do not.
func TestNchanBridgeForwardsPayloadsInOrder(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)

	type post struct{ path, body, ctype string }
	var mu sync.Mutex
	var got []post
	fail := 1 // the first POST is refused: the bridge counts it and goes on
	pub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodPost {
			http.Error(w, "want POST", http.StatusMethodNotAllowed)
			return
		}
		if fail > 0 {
			fail--
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		got = append(got, post{r.URL.EscapedPath(), string(body), r.Header.Get("Content-Type")})
		w.WriteHeader(http.StatusAccepted)
	}))
	defer pub.Close()

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	type outcome struct {
		res BridgeResult
		err error
	}
	done := make(chan outcome, 1)
	go func() { // ends when ctx is cancelled
		res, err := Bridge(ctx, BridgeConfig{Redis: srv.Addr, Publisher: pub.URL + "/pub/", Prefix: "likes:"},
			func(p string) { ready <- p }, io.Discard)
		done <- outcome{res, err}
	}()
	select {
	case p := <-ready:
		if p != "likes:{*}:ch" {
			t.Errorf("pattern %q; want likes:{*}:ch", p)
		}
	case o := <-done:
		cancel()
		t.Fatalf("bridge ended before subscribing: %v", o.err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("bridge did not subscribe")
	}

	keys := rediskeys.New("")
	payload := func(post string, n int) string {
		return fmt.Sprintf(`{"post_id":%q,"count":%d,"ts":%d}`, post, n, 1700000000000+n)
	}
	bctx := context.Background()
	var want []post
	publish := func(channel, body string) {
		t.Helper()
		if err := rdb.Publish(bctx, channel, body).Err(); err != nil {
			t.Fatal(err)
		}
	}
	publish(keys.Channel("42"), payload("42", 0)) // refused by the publisher
	for n := 1; n <= 20; n++ {
		p := []string{"42", "p-7", "a b"}[n%3]
		publish(keys.Channel(p), payload(p, n))
		want = append(want, post{"/pub/" + map[string]string{"42": "42", "p-7": "p-7", "a b": "a%20b"}[p], payload(p, n), "application/json"})
	}
	publish("other:{42}:ch", payload("42", 99)) // another prefix
	publish("likes:{42}:w:5", "1")              // not a count channel
	publish(keys.Channel("42"), payload("42", 21))
	want = append(want, post{"/pub/42", payload("42", 21), "application/json"})
	// A fence after the last: the bridge forwards one message at a time, so once the publisher
	// has the fence, the bridge has counted every message before it. (Cancelled while the last
	// wanted POST was still being answered, it would end without counting that one.)
	fence := post{"/pub/fence", payload("fence", 0), "application/json"}
	publish(keys.Channel("fence"), fence.body)

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		fenced := slices.Contains(got, fence)
		mu.Unlock()
		if fenced || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	o := <-done
	if o.err != nil {
		t.Fatalf("bridge: %v", o.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, append(want, fence)) {
		t.Fatalf("publisher got\n%q\nwant\n%q and the fence", got, want)
	}
	// The fence itself is counted unless the bridge was cancelled while it was being answered.
	if fwd := o.res.Forwarded; fwd != int64(len(want)) && fwd != int64(len(want))+1 || o.res.Failed != 1 {
		t.Fatalf("result %+v; want %d forwarded (%d with the fence), 1 failed", o.res, len(want), len(want)+1)
	}
}

// TestProcMetricsSumsProcessTree: the exporter's page parses as a node's /metrics, with the CPU
// and memory of the process and its children, and the viewers from Nchan's stub status.
func TestProcMetricsSumsProcessTree(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "nginx.pid")
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()

	pids, err := procTree("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, child.Process.Pid) || pids[0] != os.Getpid() {
		t.Fatalf("procTree = %v; want this process, then its child %d among them", pids, child.Process.Pid)
	}
	self, err := readProc("/proc", os.Getpid())
	if err != nil || self.memBytes <= 0 || self.ppid != os.Getppid() {
		t.Fatalf("readProc(self) = %+v, %v", self, err)
	}

	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "total published messages: 3\nstored messages: 1\nchannels: 2\nsubscribers: 1234\nnchan version: 1.3.6\n")
	}))
	defer status.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeProcMetrics(ctx, ln, ProcConfig{PIDFile: pidfile, Status: status.URL}) }()

	x := 0
	for i := range 20_000_000 { // some CPU time to see
		x += i
	}
	client := &http.Client{Timeout: 5 * time.Second}
	base := "http://" + ln.Addr().String()
	s, err := nodemetrics.Scrape(context.Background(), client, base)
	if err != nil {
		cancel()
		if serr := <-served; serr != nil {
			t.Logf("exporter: %v", serr)
		}
		t.Fatal(err)
	}
	if s.CPUSeconds <= 0 || s.RSSBytes < self.memBytes/2 || s.Viewers != 1234 || x == 0 {
		t.Errorf("sample %+v (self %+v); want CPU > 0, memory at least this process's, 1234 viewers", s, self)
	}
	// Without a status page there is no viewers gauge; without the pid file the page fails.
	noStatus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := procMetrics(r.Context(), ProcConfig{PIDFile: pidfile}, client)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(body)
	}))
	defer noStatus.Close()
	if s, err := nodemetrics.Scrape(context.Background(), client, noStatus.URL); err != nil || !math.IsNaN(s.Viewers) {
		t.Errorf("without --status: %+v, %v; want no viewers gauge", s, err)
	}
	if _, err := procMetrics(context.Background(), ProcConfig{PIDFile: filepath.Join(dir, "none.pid")}, client); err == nil {
		t.Error("a missing pid file gave a page")
	}
	client.CloseIdleConnections()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestReadStatOddCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "77"), 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "77 (nginx: worker (x) ) S 76 76 76 0 -1 4194624 100 0 0 0 250 125 0 0 20 0 1 0 123 1000 50\n"
	if err := os.WriteFile(filepath.Join(dir, "77", "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := readStat(dir, 77)
	if err != nil || st.ppid != 76 || math.Abs(st.cpuSeconds-3.75) > 1e-9 {
		t.Fatalf("readStat = %+v, %v; want ppid 76, 3.75 s", st, err)
	}
}
