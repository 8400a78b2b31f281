package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/batch"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestAnswered503NeverLandsLater: writer A's like is held on the wire (a TCP proxy) past its
// deadline, so A answers it 503; writer B then unlikes, 200; then A's call reaches Redis. The
// script must refuse it (DEADLINE), or the user would end up liking a post they were told they
// did not like and then unliked. Also with A's clock a second ahead of Redis' or behind it: A
// sends the script's cutoff on Redis' clock, corrected by the offset it measured
// (redisclock measures it against a shifted clock in its own tests). Uncorrected, a writer a
// second ahead names a cutoff a second late and the like lands after its 503: the test sees it.
func TestAnswered503NeverLandsLater(t *testing.T) {
	for _, tt := range []struct {
		name      string
		skew      time.Duration // A's clock ahead of Redis'
		corrected bool
	}{
		{"clocks agree", 0, true},
		{"writer 1s ahead", time.Second, true},
		{"writer 1s behind", -time.Second, true},
		{"writer 1s ahead, uncorrected: the like lands late", time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := startProxy(t, srv.Addr)
			so := store.Options{}
			if tt.corrected {
				so.ClockOffset = func() time.Duration { return -tt.skew } // Redis' clock less A's
			}
			sa := storetest.StoreOn(t, p.Addr, so)
			sa.SetClockAhead(tt.skew)
			a := coalescer(t, sa)
			sb := storetest.StoreOn(t, srv.Addr, store.Options{})
			b := coalescer(t, sb)
			ctx := context.Background()

			p.hold()
			soon, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			answered := make(chan error, 1)
			go func() { _, err := a.Like(soon, "p", "u"); answered <- err }() // exits when answered
			poll.Until(t, 5*time.Second, "A's script call held on the wire", func() bool { return p.holds("evalsha") })
			if err := <-answered; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("like on A while Redis cannot see it: %v; want the deadline (a 503)", err)
			}
			if res, err := b.Unlike(ctx, "p", "u"); err != nil || res != (store.Result{Count: 0, Changed: false}) {
				t.Fatalf("unlike on B: %+v, %v; want count 0, nothing to undo", res, err)
			}

			calls := srv.ScriptCalls(t)
			p.unhold()
			poll.Until(t, 10*time.Second, "A's late call run by Redis", func() bool { return srv.ScriptCalls(t) == calls+1 })
			landed := srv.Client(t).Exists(ctx, storetest.Keys.User("p", "u")).Val() == 1
			if landed != !tt.corrected {
				t.Fatalf("the like answered 503 landed afterwards: %v; want %v", landed, !tt.corrected)
			}
			if !tt.corrected {
				return
			}
			if n := errorReplies(t, srv, "DEADLINE"); n != 1 {
				t.Errorf("%d DEADLINE refusals; want 1, the late call's", n)
			}
			if n, err := sb.Count(ctx, "p"); err != nil || n != 0 {
				t.Errorf("count %d, %v; want 0", n, err)
			}
		})
	}
}

// TestLostReplyAnswersFirstRun cuts the connection after Redis ran a batch and before its reply
// reached the writer. go-redis sends the call again on a new connection; the second run must
// answer what the first one did ("liked":true), not what running it again would ("liked":false),
// and count the like once.
func TestLostReplyAnswersFirstRun(t *testing.T) {
	srv := redistest.Start(t)
	p := startProxy(t, srv.Addr)
	s := storetest.StoreOn(t, p.Addr, store.Options{})
	c := coalescer(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := srv.ScriptCalls(t)
	cut := p.cutNextReply()
	res, err := c.Like(ctx, "p", "u")
	select {
	case <-cut:
	default:
		t.Fatal("no reply was cut: the test proves nothing")
	}
	if err != nil || res != (store.Result{Count: 1, Changed: true}) {
		t.Errorf("like whose first reply was lost: %+v, %v; want count 1, liked", res, err)
	}
	if got := srv.ScriptCalls(t) - calls; got != 2 {
		t.Errorf("%d script calls; want 2 (the lost one and the retry)", got)
	}
	if n, err := s.Count(ctx, "p"); err != nil || n != 1 {
		t.Errorf("count %d, %v; want 1", n, err)
	}
}

// coalescer returns a coalescer of batches up to 16 on s, as a writer's, closed when the test ends.
func coalescer(t *testing.T, s *store.Store) *batch.Coalescer {
	t.Helper()
	c, err := batch.New(s, batch.Options{Size: 16, Timeout: 30 * time.Second}, batch.NewMetrics(prometheus.NewRegistry(), "test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// errorReplies returns how many error replies with code Redis has sent (INFO errorstats).
func errorReplies(t *testing.T, srv *redistest.Server, code string) int {
	t.Helper()
	info, err := srv.Do("INFO", "errorstats")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := info.(string)
	_, rest, ok := strings.Cut(s, "errorstat_"+code+":count=")
	if !ok {
		return 0
	}
	end := strings.IndexAny(rest, "\r\n")
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.Atoi(rest[:end])
	return n
}
