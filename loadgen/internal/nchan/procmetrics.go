package nchan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/likes/likes/loadgen/internal/nodemetrics"
)

// userHZ is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, which Linux fixes at 100
// for user space whatever the kernel's tick rate.
const userHZ = 100

// ProcConfig is what `loadgen procmetrics` serves.
type ProcConfig struct {
	Listen  string
	PIDFile string // the master's pid; the master and its children are summed
	Status  string // Nchan's stub status URL, for the viewers gauge ("" = none)
}

// ServeProcMetrics serves /metrics on ln until ctx ends.
func ServeProcMetrics(ctx context.Context, ln net.Listener, cfg ProcConfig) error {
	statusClient := &http.Client{Timeout: 2 * time.Second}
	defer statusClient.CloseIdleConnections()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		body, err := procMetrics(r.Context(), cfg, statusClient)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	stopShutdown := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stopShutdown()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// procMetrics reads the pid file and /proc once and renders the page.
func procMetrics(ctx context.Context, cfg ProcConfig, client *http.Client) ([]byte, error) {
	raw, err := os.ReadFile(cfg.PIDFile)
	if err != nil {
		return nil, err
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || master <= 0 {
		return nil, fmt.Errorf("%s: no pid in %q", cfg.PIDFile, raw)
	}
	pids, err := procTree("/proc", master)
	if err != nil {
		return nil, err
	}
	var cpu, mem float64
	for _, pid := range pids {
		st, err := readProc("/proc", pid)
		if err != nil {
			if pid == master {
				return nil, err
			}
			continue // a worker that exited meanwhile
		}
		cpu += st.cpuSeconds
		mem += st.memBytes
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# HELP %s User and system CPU time of the process and its children, from /proc.\n", nodemetrics.CPUSeconds)
	fmt.Fprintf(&b, "# TYPE %s counter\n%s %g\n", nodemetrics.CPUSeconds, nodemetrics.CPUSeconds, cpu)
	fmt.Fprintf(&b, "# HELP %s Proportional set size (shared pages split between the processes sharing them, else RSS) of the process and its children.\n", nodemetrics.RSSBytes)
	fmt.Fprintf(&b, "# TYPE %s gauge\n%s %g\n", nodemetrics.RSSBytes, nodemetrics.RSSBytes, mem)
	fmt.Fprintf(&b, "# HELP loadgen_procmetrics_processes Processes summed.\n# TYPE loadgen_procmetrics_processes gauge\nloadgen_procmetrics_processes %d\n", len(pids))
	if cfg.Status != "" {
		if n, err := nchanSubscribers(ctx, client, cfg.Status); err == nil {
			fmt.Fprintf(&b, "# HELP %s Subscribers, from Nchan's stub status.\n", nodemetrics.Viewers)
			fmt.Fprintf(&b, "# TYPE %s gauge\n%s %d\n", nodemetrics.Viewers, nodemetrics.Viewers, n)
		}
	}
	return b.Bytes(), nil
}

// procTree returns pid and the pids of its children (nginx's workers are children of the master).
func procTree(procDir string, pid int) ([]int, error) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	out := []int{pid}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		st, err := readStat(procDir, child)
		if err == nil && st.ppid == pid {
			out = append(out, child)
		}
	}
	return out, nil
}

type procStat struct {
	ppid       int
	cpuSeconds float64
	memBytes   float64
}

// readStat reads the parent and the CPU time from /proc/<pid>/stat.
func readStat(procDir string, pid int) (procStat, error) {
	raw, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid ... utime stime ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseUint(f[11], 10, 64)
	stime, err3 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("pid %d: malformed stat: %w", pid, err)
	}
	return procStat{ppid: ppid, cpuSeconds: float64(utime+stime) / userHZ}, nil
}

// readProc reads a process's CPU time and memory: its proportional set size from smaps_rollup,
// so that the pages nginx's workers share (the binary, Nchan's shared memory zone) count once
// in the sum rather than once per worker; its RSS from statm where smaps_rollup is unreadable.
func readProc(procDir string, pid int) (procStat, error) {
	st, err := readStat(procDir, pid)
	if err != nil {
		return st, err
	}
	if pss, ok := readPSS(filepath.Join(procDir, strconv.Itoa(pid), "smaps_rollup")); ok {
		st.memBytes = pss
		return st, nil
	}
	raw, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "statm"))
	if err != nil {
		return st, err
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return st, fmt.Errorf("pid %d: malformed statm", pid)
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return st, fmt.Errorf("pid %d: malformed statm: %w", pid, err)
	}
	st.memBytes = float64(pages) * float64(os.Getpagesize())
	return st, nil
}

// readPSS returns the "Pss:" line of a smaps_rollup file, in bytes.
func readPSS(path string) (float64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Pss:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "1234 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		return float64(kb) * 1024, err == nil
	}
	return 0, false
}

// nchanSubscribers reads the `subscribers: N` line of Nchan's stub status page (its total over
// all workers).
func nchanSubscribers(ctx context.Context, client *http.Client, statusURL string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", statusURL, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "subscribers:"); ok {
			return strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no subscribers line", statusURL)
}
