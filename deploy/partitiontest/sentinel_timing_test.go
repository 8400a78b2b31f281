package partitiontest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/netnstest"
	"github.com/likes/likes/testkit/poll"
)

// longestStall is the longest a healthy data node went without answering a PING under the
// shipped settings (appendonly, appendfsync everysec, a dataset filled to maxmemory 768mb, the
// chart's 1-CPU limit), measured on 2026-12-07 (docs/RELIABILITY.md): 115 ms, throttled to one
// CPU while an AOF rewrite ran, on a loaded machine. A fork took at most 72 ms, an fsync never
// held the main thread past 15 ms, and CPU throttling stalls it for less than its 100 ms period.
const longestStall = 120 * time.Millisecond

const (
	healthyStalls = 10 // longestStall pauses of a primary that must not fail it over
	// failoverRuns primaries stopped past down-after, each of which must fail over exactly once:
	// every fifth killed (SIGKILL), the others paused (SIGSTOP), 20 of them. Kills are what showed
	// the second promotion at 1 s (pauses never did); five keep the test near three minutes.
	failoverRuns = 25
)

// TestSentinelTiming holds the Sentinel timing the deployments ship (sentinelCfg) to two
// promises, on one cluster:
//   - a primary that stalls as long as a healthy one was measured to (longestStall), at any point
//     of the Sentinels' PING period, is called down by none of them, and stays the primary;
//   - a primary paused or killed past down-after is failed over exactly once: every Sentinel
//     announces one +switch-master, all to the same replica, and none calls the new primary down
//     in the down-after that follows its switch. A Sentinel counts a new primary's silence from
//     its switch but connects at most once a PING period (1 s), and it was retrying the old
//     primary (every second when that one refuses connections: killed), so it may reach the new
//     one only a second later; with down-after at 1 s it can call it down before its first PING
//     is answered, and two that do at once promote a second replica (seen here on the third
//     kill at 1 s).
//
// The old primary, once replaced, is killed and started again as the new primary's replica, as a
// supervisor would restart it: thawed, it would wait 8 s (four hello periods) for the Sentinels to
// reconfigure it, and the runs would take five minutes.
func TestSentinelTiming(t *testing.T) {
	enabled(t)
	c := startCluster(t, t.TempDir())
	ev := c.watchSentinels()
	downAfter := c.downAfter()
	t.Logf("Sentinels' down-after-milliseconds %v", downAfter)

	p, err := c.primary()
	if err != nil {
		t.Fatalf("no settled primary: %v", err)
	}
	from := ev.mark()
	for i := range healthyStalls {
		c.pause(p)
		time.Sleep(longestStall) // the stall itself
		c.resume(p)
		// Spaced by a fraction of the PING period, so that the stalls fall at different points of it.
		time.Sleep(time.Duration(300+37*i) * time.Millisecond)
	}
	// Nothing to await: no event must come. A Sentinel calls a node down down-after past its
	// first unanswered PING, which a PING period after the last stall has been answered.
	time.Sleep(downAfter + time.Second)
	if got := ev.since(from); len(got) != 0 {
		t.Errorf("after %d stalls of %v of the primary %s the Sentinels announced %v; want nothing", healthyStalls, longestStall, p.Name, got)
	}
	if now, err := c.primary(); err != nil || now != p {
		t.Errorf("after %d stalls of %v the primary is %v (%v); want %s still", healthyStalls, longestStall, now, err, p.Name)
	}

	var took []time.Duration
	for run := range failoverRuns {
		old := c.settledPrimary()
		from := ev.mark()
		stopped := time.Now()
		killed := run%5 == 4
		fault := "paused"
		if killed {
			fault = "killed"
			c.crash(old)
		} else {
			c.pause(old)
		}
		var switched []sentinelEvent
		poll.Check(t, 30*time.Second, func() error {
			switched = ev.switches(from)
			if len(switched) < len(c.sentinels) {
				return fmt.Errorf("run %d: %d Sentinels announced +switch-master %v after the primary %s was %s; want all %d",
					run, len(switched), switched, old.Name, fault, len(c.sentinels))
			}
			return nil
		})
		took = append(took, switched[0].at.Sub(stopped))
		promoted := switchedTo(switched[0])
		if !killed {
			c.crash(old)
		}
		c.restart(old)
		// A Sentinel counts the new primary's silence from its switch, and calls it down
		// down-after past it unless a PING was answered by then: nothing to await but that time
		// past the last switch (and half a second for the event to arrive).
		time.Sleep(time.Until(switched[len(switched)-1].at.Add(downAfter + 500*time.Millisecond)))
		after := ev.since(from)
		var again []sentinelEvent
		for _, e := range after {
			if e.channel == "+switch-master" && switchedTo(e) != promoted || e.channel == "+sdown" && strings.HasPrefix(e.payload, "master "+master+" "+promoted+" ") {
				again = append(again, e)
			}
		}
		switches := ev.switches(from)
		if len(switches) != len(c.sentinels) || len(again) != 0 {
			t.Errorf("run %d: the primary %s %s: %d +switch-master (want one a Sentinel, %d, all to %s); the new primary called down or replaced again: %v",
				run, old.Name, fault, len(switches), len(c.sentinels), promoted, again)
		}
		poll.Check(t, 30*time.Second, func() error {
			p, err := c.primary()
			if err != nil {
				return err
			}
			if p.Addr.String() != promoted {
				return fmt.Errorf("run %d: the Sentinels name %s; want %s, promoted once", run, p.Name, promoted)
			}
			return nil
		})
		if t.Failed() {
			t.Logf("run %d: the Sentinels announced %v", run, after)
			return
		}
	}
	t.Logf("%d primaries stopped past down-after %v (every fifth killed, the others paused): each failed over once; first +switch-master after %v",
		failoverRuns, downAfter, took)
}

// sentinelEvent is one message a Sentinel published.
type sentinelEvent struct {
	sentinel int // index in cluster.sentinels
	channel  string
	payload  string
	at       time.Time
}

func (e sentinelEvent) String() string {
	return fmt.Sprintf("sentinel-%d %s %s @%s", e.sentinel, e.channel, e.payload, e.at.Format("15:04:05.000"))
}

// switchedTo is the address of the primary a +switch-master names ("name old-ip old-port new-ip
// new-port").
func switchedTo(e sentinelEvent) string {
	f := strings.Fields(e.payload)
	if len(f) != 5 {
		return ""
	}
	return f[3]
}

// sentinelEvents records the primaries every Sentinel switches to (+switch-master) and the
// nodes it calls down (+sdown), in the order they arrive.
type sentinelEvents struct {
	mu     sync.Mutex
	events []sentinelEvent
}

// watchSentinels subscribes to every Sentinel's +switch-master and +sdown. One goroutine a
// Sentinel receives them; each ends when the test's cleanup cancels its context and closes its
// connection, and the cleanup waits for them.
func (c *cluster) watchSentinels() *sentinelEvents {
	c.t.Helper()
	ev := &sentinelEvents{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var subs []*redis.PubSub
	var clients []*redis.Client
	c.t.Cleanup(func() {
		cancel()
		for _, s := range subs {
			_ = s.Close()
		}
		wg.Wait()
		for _, r := range clients {
			_ = r.Close()
		}
	})
	for i, s := range c.sentinels {
		rdb := redis.NewClient(&redis.Options{Addr: s.HostPort(26379), Protocol: 2, DialTimeout: time.Second})
		clients = append(clients, rdb)
		sub := rdb.Subscribe(ctx, "+switch-master", "+sdown")
		subs = append(subs, sub)
		for range 2 { // one confirmation a channel: subscribed before any fault
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := sub.Receive(rctx)
			rcancel()
			if err != nil {
				c.t.Fatalf("%s: subscribe: %v", s.Name, err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := sub.ReceiveMessage(ctx)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue // go-redis reconnects and subscribes again
				}
				ev.mu.Lock()
				ev.events = append(ev.events, sentinelEvent{sentinel: i, channel: m.Channel, payload: m.Payload, at: time.Now()})
				ev.mu.Unlock()
			}
		}()
	}
	return ev
}

// mark is where the events from now on begin.
func (ev *sentinelEvents) mark() int {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return len(ev.events)
}

// since returns the events from mark on.
func (ev *sentinelEvents) since(mark int) []sentinelEvent {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]sentinelEvent(nil), ev.events[mark:]...)
}

// switches returns the +switch-master events from mark on.
func (ev *sentinelEvents) switches(mark int) []sentinelEvent {
	var out []sentinelEvent
	for _, e := range ev.since(mark) {
		if e.channel == "+switch-master" {
			out = append(out, e)
		}
	}
	return out
}

// downAfter is the down-after-milliseconds the first Sentinel runs with.
func (c *cluster) downAfter() time.Duration {
	c.t.Helper()
	v, err := redisDo(c.sentinels[0].HostPort(26379), "sentinel", "master", master)
	if err != nil {
		c.t.Fatalf("sentinel master: %v", err)
	}
	var fields []any
	switch m := v.(type) {
	case []any:
		fields = m
	case map[any]any:
		for k, val := range m {
			fields = append(fields, k, val)
		}
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if fmt.Sprint(fields[i]) == "down-after-milliseconds" {
			ms, err := strconv.Atoi(fmt.Sprint(fields[i+1]))
			if err != nil {
				c.t.Fatalf("down-after-milliseconds %v: %v", fields[i+1], err)
			}
			return time.Duration(ms) * time.Millisecond
		}
	}
	c.t.Fatalf("sentinel master %s: no down-after-milliseconds in %v", master, v)
	return 0
}

// settledPrimary waits for the primary the Sentinels name, with both replicas linked.
func (c *cluster) settledPrimary() *netnstest.Host {
	c.t.Helper()
	var p *netnstest.Host
	poll.Check(c.t, 60*time.Second, func() error {
		var err error
		p, err = c.primary()
		if err == nil && p == nil {
			err = errors.New("no primary")
		}
		return err
	})
	return p
}
