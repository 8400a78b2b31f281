package runtimelimits

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Limits are what the container grants, read from its cgroup (v2 or v1).
type Limits struct {
	CPU    float64 // CPUs the quota allows per period; 0: no quota
	Memory int64   // bytes; 0: no limit
}

// Read returns the limits of the cgroup mounted at root ("/sys/fs/cgroup" in a container).
func Read(root string) Limits {
	return Limits{CPU: cpuQuota(root), Memory: memoryLimit(root)}
}

// Apply sizes the runtime to the container's limits, unless the environment sets GOMAXPROCS or
// GOMEMLIMIT (the runtime has applied those already), and logs what it chose.
//
// GOMAXPROCS: Go 1.25 and later already follow the CPU quota, rounded up, but never go below 2
// (Go's reason: a process with one P cannot run a goroutine while another spins in a tight loop).
// Below one CPU that floor costs more than it gives: two threads spend a 0.25 quota in half the
// time, so the container is throttled for longer in each period, and fanout-svc would run two
// event loops that take turns on a fraction of one CPU. Below one CPU we set 1; at one CPU and
// above the runtime's own choice stands (and keeps following a quota that changes).
//
// GOMEMLIMIT: Go reads no memory limit at all. 90% of the container's limit, or of the machine's
// memory without one, so that near the limit the collector works harder instead of the process
// being killed.
func Apply(log *zap.Logger) Limits {
	l := Read("/sys/fs/cgroup")
	if os.Getenv("GOMAXPROCS") == "" && l.CPU > 0 && l.CPU < 1 {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if soft := SoftMemoryLimit(l.Memory, machineMemory()); soft > 0 {
			debug.SetMemoryLimit(soft)
		}
	}
	log.Info("runtime limits", zap.Float64("cpu_quota", l.CPU), zap.Int64("memory_limit_bytes", l.Memory),
		zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)), zap.Int64("gomemlimit_bytes", debug.SetMemoryLimit(-1)))
	return l
}

// SoftMemoryLimit is the GOMEMLIMIT for a container limit (0: none) on a machine with total bytes.
func SoftMemoryLimit(limit, total int64) int64 {
	if limit <= 0 || (total > 0 && limit > total) {
		limit = total
	}
	return limit / 10 * 9
}

func machineMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// cpuQuota reads cgroup v2's cpu.max ("25000 100000", or "max 100000") or v1's
// cpu.cfs_quota_us (-1 without a quota) and cpu.cfs_period_us.
func cpuQuota(root string) float64 {
	if f := strings.Fields(readFile(filepath.Join(root, "cpu.max"))); len(f) == 2 {
		return ratio(f[0], f[1])
	}
	for _, dir := range []string{"cpu", "cpu,cpuacct"} {
		quota := readFile(filepath.Join(root, dir, "cpu.cfs_quota_us"))
		period := readFile(filepath.Join(root, dir, "cpu.cfs_period_us"))
		if quota != "" && period != "" {
			return ratio(quota, period)
		}
	}
	return 0
}

func ratio(quota, period string) float64 {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 || math.IsInf(q, 0) {
		return 0 // "max", -1, or unreadable: no quota
	}
	return q / p
}

// memoryLimit reads cgroup v2's memory.max or v1's memory.limit_in_bytes; v1 reports "no limit"
// as a huge number (the page-rounded maximum int64).
func memoryLimit(root string) int64 {
	for _, path := range []string{filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		v := readFile(path)
		if v == "" || v == "max" {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < 1<<50 {
			return n
		}
	}
	return 0
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
