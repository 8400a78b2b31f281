package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/redistest"
)

// phaseColumns are the per-phase fields the ramp's JSON must carry.
var phaseColumns = []string{
	"conns_wanted", "conns_open", "conns_failed", "conns_refused", "conns_dropped", "workers",
	"likes_per_sec", "likes_acked", "like_errors", "like_p50_ms", "like_p99_ms",
	"events_per_sec", "events_expected", "events_received", "delivery_pct",
	"convergence_pct", "converged", "converge_total",
	"latency_p50_ms", "latency_p99_ms", "latency_p999_ms",
	"generator_cpu_pct", "generator_cores_busy_pct", "generator_saturated", "nodes_cpu_pct",
	"events_per_node_cpu_sec", "writer_cpu_pct", "likes_per_writer_cpu_sec",
	"mem_per_conn_idle_bytes", "mem_per_conn_bytes", "nodes", "posts", "notes",
}

// nodeColumns are the per-node fields.
var nodeColumns = []string{"url", "viewers", "cpu_pct", "rss_base_bytes", "rss_idle_bytes", "rss_start_bytes", "rss_bytes",
	"mem_per_conn_idle_bytes", "mem_per_conn_bytes"}

// runLoadgen runs a real loadgen process and returns its stdout, failing the test on error.
func runLoadgen(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin(t, "loadgen"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loadgen %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	t.Logf("loadgen stderr:\n%s", stderr.String())
	return stdout.Bytes()
}

// TestLoadgenRampLightLoad runs a tiny two-phase ramp over two fanout nodes: at this load every
// like must reach every viewer and every viewer must converge, and every column must be there.
// The writer is in the default identity mode: the likes carry the session tokens loadgen signs
// with the key it reads from Redis (--identity session, the default).
func TestLoadgenRampLightLoad(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL, "TRUST_USER_HEADER=false")
	nodeA := StartFanout(t, redis.URL)
	nodeB := StartFanout(t, redis.URL)
	dir := t.TempDir()
	csvPath, htmlPath := filepath.Join(dir, "ramp.csv"), filepath.Join(dir, "ramp.html")
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", nodeA.URL+","+nodeB.URL,
		"--conns", "100,300", "--posts", "3", "--rate", "20", "--warmup", "500ms", "--window", "2s",
		"--sources", "127.0.0.2-127.0.0.4", "--redis", redis.Addr, "--json", "--csv", csvPath, "--html", htmlPath)

	var res struct {
		Nodes  []string         `json:"fanout_nodes"`
		Phases []map[string]any `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode JSON: %v\n%s", err, out)
	}
	if len(res.Phases) != 2 || len(res.Nodes) != 2 {
		t.Fatalf("got %d phases over %d nodes; want 2 over 2:\n%s", len(res.Phases), len(res.Nodes), out)
	}
	for i, ph := range res.Phases {
		for _, col := range phaseColumns {
			if _, ok := ph[col]; !ok {
				t.Errorf("phase %d lacks %q", i+1, col)
			}
		}
		wanted := []float64{100, 300}[i]
		checks := []struct {
			field string
			want  float64
		}{
			{"conns_wanted", wanted}, {"conns_open", wanted}, {"conns_failed", 0}, {"conns_refused", 0},
			{"conns_dropped", 0}, {"like_errors", 0}, {"delivery_pct", 100}, {"convergence_pct", 100},
		}
		for _, c := range checks {
			if got, _ := ph[c.field].(float64); got != c.want {
				t.Errorf("phase %d %s = %v; want %v", i+1, c.field, ph[c.field], c.want)
			}
		}
		if exp, _ := ph["events_expected"].(float64); exp < 20*wanted/3 {
			t.Errorf("phase %d events_expected = %v; want at least a second of likes x viewers", i+1, exp)
		}
		for _, col := range []string{"latency_p99_ms", "like_p99_ms", "generator_cpu_pct", "mem_per_conn_bytes", "nodes_cpu_pct",
			"events_per_node_cpu_sec", "writer_cpu_pct", "likes_per_writer_cpu_sec"} {
			if ph[col] == nil {
				t.Errorf("phase %d %s is null; want a figure", i+1, col)
			}
		}
		nodes, _ := ph["nodes"].([]any)
		if len(nodes) != 2 {
			t.Fatalf("phase %d has %d nodes; want 2", i+1, len(nodes))
		}
		var gauges float64
		for _, n := range nodes {
			node := n.(map[string]any)
			for _, col := range nodeColumns {
				if node[col] == nil {
					t.Errorf("phase %d node %v: %s missing or null", i+1, node["url"], col)
				}
			}
			v, _ := node["viewers"].(float64)
			if v < wanted/2-3 || v > wanted/2+3 { // viewers go to nodes in runs of one per post
				t.Errorf("phase %d node %v viewers gauge %v; want about %v", i+1, node["url"], v, wanted/2)
			}
			gauges += v
		}
		if gauges != wanted {
			t.Errorf("phase %d: the nodes' viewer gauges add up to %v; want %v", i+1, gauges, wanted)
		}
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "conns_wanted" {
		t.Fatalf("CSV: %v, %d rows; want header + 2 phases", err, len(rows))
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "<svg"); n != 4 || strings.Contains(string(page), "<script") {
		t.Fatalf("HTML has %d charts (want 4) or a script", n)
	}
}

// TestLoadgenReportsRefusalsAsCapped: a node at its max-conns refuses viewers with 503; the ramp
// reports them as refused (capped), not failed, and the viewers it has still get every like.
func TestLoadgenReportsRefusalsAsCapped(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	node := StartFanout(t, redis.URL, "MAX_CONNS=50")
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", node.URL, "--conns", "80",
		"--posts", "2", "--rate", "20", "--warmup", "300ms", "--window", "1500ms", "--identity", "header")
	table := string(out)
	for _, want := range []string{"refused", "capped: 30 viewers refused"} {
		if !strings.Contains(table, want) {
			t.Fatalf("table lacks %q:\n%s", want, table)
		}
	}
	// The row: conns 80, open 50, failed 0, refused 30, dropped 0, upd/s, likes/s, skipped, like
	// err, like p50, like p99, events/s, delivery 100.00.
	lines := strings.Split(table, "\n")
	fields := strings.Fields(lines[2])
	if len(fields) < 13 || fields[0] != "80" || fields[1] != "50" || fields[2] != "0" || fields[3] != "30" || fields[12] != "100.00" {
		t.Fatalf("phase row %q; want 80 wanted, 50 open, 0 failed, 30 refused, delivery 100.00", lines[2])
	}
}

// TestLoadgenClosedLoop runs the closed loop (writers that send the next like when the last is
// answered, as fast as the writer allows): every like is acknowledged and every viewer converges.
// Delivery is not asserted: at the closed loop's full speed a node may conflate updates for slow
// viewers (newest value wins), which the ramp reports as delivery below 100%.
func TestLoadgenClosedLoop(t *testing.T) {
	redis := redistest.Start(t)
	writer := StartWriter(t, redis.URL)
	node := StartFanout(t, redis.URL)
	out := runLoadgen(t, "ramp", "--writer", writer.URL, "--fanout", node.URL, "--conns", "60",
		"--posts", "3", "--writers", "2", "--warmup", "300ms", "--window", "1500ms", "--json", "--identity", "header")
	var res struct {
		Mode   string `json:"mode"`
		Phases []struct {
			LikesAcked  int64    `json:"likes_acked"`
			LikeErrors  int64    `json:"like_errors"`
			Convergence float64  `json:"convergence_pct"`
			Delivery    *float64 `json:"delivery_pct"`
			Received    int64    `json:"events_received"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Phases) != 1 {
		t.Fatalf("decode JSON: %v (%d phases)\n%s", err, len(res.Phases), out)
	}
	ph := res.Phases[0]
	if res.Mode != "closed loop, 2 writers" || ph.LikesAcked < 10 || ph.LikeErrors != 0 {
		t.Fatalf("mode %q, %d likes acked, %d errors; want a closed loop with likes and no errors", res.Mode, ph.LikesAcked, ph.LikeErrors)
	}
	if ph.Convergence != 100 || ph.Delivery == nil || ph.Received == 0 {
		t.Fatalf("convergence %v%%, delivery %v, received %d; want 100%% and a delivery figure", ph.Convergence, ph.Delivery, ph.Received)
	}
}
