package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// stormViewers is how many viewers the reconnect storm drops at once. The test process holds one
// socket per viewer and may open 20,000 files.
const stormViewers = 15_000

// TestReconnectStorm drops 15,000 viewers at once by crashing their node and starting it again
// on the same address. They come back after the jittered retry: delay the node sent them, and
// must all be served (streaming, at the count reached meanwhile) within 10 s of the crash, while
// the restarted node keeps answering /healthz quickly.
//
// On one loopback host a storm also overflows the kernel's queues (the listen backlog, capped by
// net.core.somaxconn, and the per-CPU packet backlog); the test logs those drops, which explain
// the tail of the reconnect times.
func TestReconnectStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("15,000 viewers; not in -short")
	}
	rds := redistest.Start(t)
	writer := StartWriter(t, rds.URL)
	node := StartFanoutNoRace(t, rds.URL)
	const post = "storm"
	likeMany(t, writer.URL, post, "before", 7, 7)
	start := time.Now()
	crowd := StartCrowd(t, []string{node.Addr}, post, stormViewers, 2*time.Minute)
	crowd.WaitCount(t, 20*time.Second, 7)
	t.Logf("%d viewers connected in %v", stormViewers, time.Since(start))
	connects := crowd.Status(t).Connects

	kernelBefore := readKernelDrops()
	node.Kill()
	crashed := time.Now()
	likeMany(t, writer.URL, post, "during", 3, 3)
	node.Restart()
	up := time.Since(crashed)
	probe := startHealthProbe(node.URL, 50*time.Millisecond, false)
	fresh := startHealthProbe(node.URL, 50*time.Millisecond, true)
	took := crowd.WaitCount(t, 10*time.Second-time.Since(crashed), 10)
	worst, failures, probes := probe.Stop()
	freshWorst, freshFailures, freshProbes := fresh.Stop()
	t.Logf("node back %v after the crash; all %d viewers served at the new count %v after it; /healthz worst %v over %d probes on a kept-alive connection, %v over %d probes on new connections (%d failed); kernel: %s",
		up, stormViewers, up+took, worst, probes, freshWorst, freshProbes, freshFailures, readKernelDrops().since(kernelBefore))

	if crowd.Status(t).Connected != stormViewers {
		t.Errorf("connected viewers: got %d; want %d", crowd.Status(t).Connected, stormViewers)
	}
	if got := crowd.Status(t).Connects - connects; got < stormViewers {
		t.Errorf("reconnects: got %d; want at least %d", got, stormViewers)
	}
	// The bound is the liveness probe's timeoutSeconds in deploy/base/fanout-svc-deployment.yaml.
	if failures+freshFailures > 0 || worst > 2*time.Second {
		t.Errorf("/healthz during the storm: %d of %d probes failed, worst %v; want none failed and all within 2s", failures+freshFailures, probes+freshProbes, worst)
	}
	if got := node.Metric(t, "likes_fanout_viewers"); got != stormViewers {
		t.Errorf("node viewers gauge: got %v; want %d", got, stormViewers)
	}
}

// kernelDrops are the host's counters of packets and connection attempts the kernel dropped.
type kernelDrops struct{ listenOverflows, timeouts, backlogDrops int64 }

func readKernelDrops() kernelDrops {
	var k kernelDrops
	if b, err := os.ReadFile("/proc/net/netstat"); err == nil {
		lines := strings.Split(string(b), "\n")
		for i := 0; i+1 < len(lines); i += 2 {
			names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) {
				continue
			}
			for j, n := range names {
				v, _ := strconv.ParseInt(values[j], 10, 64)
				switch n {
				case "ListenOverflows":
					k.listenOverflows = v
				case "TCPTimeouts":
					k.timeouts = v
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/net/softnet_stat"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				v, _ := strconv.ParseInt(f[1], 16, 64)
				k.backlogDrops += v
			}
		}
	}
	return k
}

func (k kernelDrops) since(old kernelDrops) string {
	return fmt.Sprintf("%d SYNs dropped on a full listen backlog, %d packets dropped on a full CPU backlog, %d retransmission timeouts",
		k.listenOverflows-old.listenOverflows, k.backlogDrops-old.backlogDrops, k.timeouts-old.timeouts)
}
