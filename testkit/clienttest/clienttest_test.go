package clienttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestViewerReconnectsWithLastEventID: the viewer keeps the newest count, follows the server's
// retry hint, sends Last-Event-ID on its second connection and ignores an older version.
func TestViewerReconnectsWithLastEventID(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		var b []byte
		b = sse.AppendRetry(b, 10)
		for _, u := range []update.Update{{PostID: "p", Count: int64(n), TS: int64(100 * n)}, {PostID: "p", Count: 99, TS: 1}} {
			b = sse.AppendEvent(b, fmt.Appendf(nil, "%d", u.Count), sse.EventCount, u.AppendJSON(nil))
		}
		_, _ = w.Write(b)
		w.(http.Flusher).Flush() // a stream is chunked, as fanout-svc sends it
		if n >= 2 {              // the second stream stays open until the viewer leaves
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	v := Watch(t, srv.URL)
	WaitCount(t, 5*time.Second, "p", 2, v)
	_, backwards, connects := v.Stats()
	if connects != 2 || backwards != 2 {
		t.Errorf("connects %d, backwards %d; want 2 and 2 (one stale update per stream)", connects, backwards)
	}
	v.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) != 2 || lastIDs[0] != "" || lastIDs[1] != "99" {
		t.Errorf("Last-Event-ID per connection %q; want [\"\" \"99\"] (the id of the last event seen)", lastIDs)
	}
}

// TestLikeFlowCountsAcknowledged: a refused like is retried by the same user and only 200s count.
func TestLikeFlowCountsAcknowledged(t *testing.T) {
	var mu sync.Mutex
	users := map[string]int{}
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		users[r.Header.Get("X-User-ID")]++
		fmt.Fprintf(w, `{"post_id":"p","count":%d,"liked":true}`, len(users))
	}))
	defer srv.Close()
	f := StartLikeFlow(t, srv.URL, "p", "u", time.Millisecond)
	poll.Until(t, 5*time.Second, "ten acknowledged likes", func() bool { return f.Sent() >= 10 })
	f.Stop()
	mu.Lock()
	defer mu.Unlock()
	if int64(len(users)) != f.Sent() || f.Failed() == 0 {
		t.Errorf("sent %d, failed %d, distinct users stored %d; want sent = users and some failures", f.Sent(), f.Failed(), len(users))
	}
	for u, n := range users {
		if n != 1 {
			t.Errorf("user %s stored %d times; want once", u, n)
		}
	}
}

func TestHAProxyServersAndMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stats;csv":
			fmt.Fprint(w, "# pxname,svname,qcur,scur,status,addr\n"+
				"streams,FRONTEND,,3,OPEN,\n"+
				"fanout-svc,fanout1,0,2,UP,172.18.0.5:8090\n"+
				"fanout-svc,fanout2,0,1,DOWN,172.18.0.6:8090\n"+
				"fanout-svc,fanout3,0,0,MAINT (resolution),\n"+
				"fanout-svc,BACKEND,0,3,UP,\n")
		case "/metrics":
			fmt.Fprint(w, "# HELP likes_fanout_viewers x\nlikes_fanout_viewers 7\nlikes_fanout_viewers_other 1\n")
		}
	}))
	defer srv.Close()
	servers, err := HAProxyServers(srv.URL+"/stats", "fanout-svc")
	if err != nil || len(servers) != 3 {
		t.Fatalf("servers %v, %v; want 3", servers, err)
	}
	if s := servers[0]; s.Name != "fanout1" || s.Status != "UP" || s.Current != 2 || s.Address != "172.18.0.5:8090" {
		t.Errorf("first server %+v; want fanout1 UP with 2 sessions at 172.18.0.5:8090", s)
	}
	if got := HAProxyServersUp(srv.URL+"/stats", "fanout-svc"); got != 1 {
		t.Errorf("servers up %d; want 1", got)
	}
	if got, err := ScrapeMetric(srv.URL, "likes_fanout_viewers"); err != nil || got != 7 {
		t.Errorf("likes_fanout_viewers = %v, %v; want 7", got, err)
	}
	if _, err := ScrapeMetric(srv.URL, "likes_missing"); err == nil {
		t.Errorf("a missing metric read without error")
	}
}
