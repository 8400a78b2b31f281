package churn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunOpensAndDropsStreamsAtRate(t *testing.T) {
	var served, refusedN atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sse/p1" {
			refusedN.Add(1)
			http.Error(w, "full", http.StatusServiceUnavailable)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // held until the client drops it
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{Fanout: []string{srv.URL}, Rate: 100, Hold: 50 * time.Millisecond,
		Duration: 500 * time.Millisecond, Posts: 2, Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	total := res.Opened + res.Refused + res.Failed
	if total < 30 || total > 60 {
		t.Errorf("opened %d streams in 0.5 s at 100/s; want about 50", total)
	}
	if res.Failed != 0 || res.Opened != served.Load() || res.Refused != refusedN.Load() || res.Refused == 0 {
		t.Errorf("got %+v; server served %d and refused %d", res, served.Load(), refusedN.Load())
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if _, err := Run(context.Background(), Config{Fanout: []string{"::"}, Rate: 1, Posts: 1, Duration: time.Millisecond}); err == nil {
		t.Error("accepted a fanout URL without a host")
	}
	if _, err := Run(context.Background(), Config{Fanout: []string{"http://x"}, Rate: 0, Posts: 1}); err == nil {
		t.Error("accepted rate 0")
	}
}
