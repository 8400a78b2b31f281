package dockertest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
)

// The stack's Redis services (docker-compose.yml): three data nodes, redis-0 the primary at the
// first start, and three Sentinels monitoring them under sentinelMaster.
var (
	dataNodes = []string{"redis-0", "redis-1", "redis-2"}
	sentinels = []string{"sentinel-0", "sentinel-1", "sentinel-2"}
)

const sentinelMaster = "mymaster"

// redisCLI runs redis-cli inside the container of service (its first running one), as the
// read-only monitor user, whose password the container holds (the credentials service put it
// there, as for its health checks).
func (s *stack) redisCLI(service string, args ...string) (string, error) {
	names := s.containers(service, false)
	if len(names) == 0 {
		return "", fmt.Errorf("%s is not running", service)
	}
	asMonitor := `REDISCLI_AUTH=$(cat /likes-credentials/monitor.password) exec redis-cli --user monitor "$@"`
	out, err := s.docker(append([]string{"exec", names[0], "sh", "-c", asMonitor, "redis-cli"}, args...)...)
	return strings.TrimSpace(out), err
}

// replication returns a data node's INFO replication fields.
func (s *stack) replication(node string) (map[string]string, error) {
	out, err := s.redisCLI(node, "info", "replication")
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// agreedPrimary returns the data node every running Sentinel names as the primary, or an error
// when one cannot say or they differ.
func (s *stack) agreedPrimary() (string, error) {
	agreed := ""
	for _, sn := range sentinels {
		out, err := s.redisCLI(sn, "-p", "26379", "sentinel", "get-master-addr-by-name", sentinelMaster)
		if err != nil {
			return "", fmt.Errorf("%s: %w", sn, err)
		}
		name, _, _ := strings.Cut(out, "\n")
		if agreed != "" && name != agreed {
			return "", fmt.Errorf("sentinels name %s and %s", agreed, name)
		}
		agreed = name
	}
	return agreed, nil
}

// inSync checks that primary is a master and every other data node replicates it, link up.
func (s *stack) inSync(primary string) error {
	for _, n := range dataNodes {
		info, err := s.replication(n)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		switch {
		case n == primary && info["role"] != "master":
			return fmt.Errorf("primary %s reports role %s", n, info["role"])
		case n != primary && (info["role"] != "slave" || info["master_host"] != primary || info["master_link_status"] != "up"):
			return fmt.Errorf("%s: role %s of %s, link %s; want a replica of %s, link up", n, info["role"], info["master_host"], info["master_link_status"], primary)
		}
	}
	return nil
}

// awaitTopology waits until the Sentinels agree on a primary and the other two data nodes
// replicate it, and returns the primary.
func (s *stack) awaitTopology(t *testing.T, within time.Duration) string {
	t.Helper()
	var primary string
	poll.Check(t, within, func() error {
		var err error
		if primary, err = s.agreedPrimary(); err != nil {
			return err
		}
		return s.inSync(primary)
	})
	return primary
}

// awaitPromoted waits until every running Sentinel names a primary other than old, and that node
// reports itself master, and returns it.
func (s *stack) awaitPromoted(t *testing.T, old string, within time.Duration) string {
	t.Helper()
	var primary string
	poll.Check(t, within, func() error {
		var err error
		if primary, err = s.agreedPrimary(); err != nil {
			return err
		}
		if primary == old {
			return fmt.Errorf("the Sentinels to promote a replica of %s (they still name it)", old)
		}
		info, err := s.replication(primary)
		if err != nil {
			return fmt.Errorf("%s, named primary: %w", primary, err)
		}
		if info["role"] != "master" {
			return fmt.Errorf("%s, named primary, reports role %q", primary, info["role"])
		}
		return nil
	})
	return primary
}

// sheds returns each running fanout node's likes_fanout_redis_sheds_total.
func (s *stack) sheds() map[string]float64 {
	out := map[string]float64{}
	for _, n := range s.nodes() {
		out[n.name] = n.metric("likes_fanout_redis_sheds_total")
	}
	return out
}

// ackWatch follows a LikeFlow's acknowledgements and keeps the longest stretch without one: the
// time a fault left likes unacknowledged, as a client saw it.
type ackWatch struct {
	flow *clienttest.LikeFlow
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	last    time.Time     // the newest acknowledgement seen
	longest time.Duration // the longest stretch between two acknowledgements
}

// watchAcks starts polling flow every 5 ms until Stop.
func watchAcks(flow *clienttest.LikeFlow) *ackWatch {
	w := &ackWatch{flow: flow, stop: make(chan struct{}), done: make(chan struct{}), last: time.Now()}
	go w.run() // exits when Stop closes w.stop
	return w
}

func (w *ackWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	sent := w.flow.Sent()
	for {
		select {
		case <-w.stop:
			return
		case now := <-tick.C:
			if n := w.flow.Sent(); n != sent {
				sent = n
				w.mu.Lock()
				w.longest = max(w.longest, now.Sub(w.last))
				w.last = now
				w.mu.Unlock()
			}
		}
	}
}

// Stop ends the watch and returns the longest stretch without an acknowledgement, counting one
// still open at the end.
func (w *ackWatch) Stop() time.Duration {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.longest, time.Since(w.last))
}

// noAlert fails the test if Prometheus reports the alert name pending or firing.
func (s *stack) noAlert(t *testing.T, name string) {
	t.Helper()
	active, err := s.alerts()
	if err != nil {
		t.Errorf("ask Prometheus for alerts: %v", err)
		return
	}
	for _, a := range active {
		if a.Labels["alertname"] == name {
			t.Errorf("prometheus reports %v; want no %s", a, name)
		}
	}
}
