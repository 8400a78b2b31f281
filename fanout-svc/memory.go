package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// tuneMemory sets a soft memory limit when GOMEMLIMIT is not set: 90% of the container's cgroup
// limit, or of the machine's memory, so that near the limit the collector works harder instead of
// the node being killed for exceeding its container. GOGC keeps Go's default of 100: with freed
// heap returned after connect bursts (releaseIdleMemory), 18,000 idle viewers measured 1.41 KiB
// each at GOGC=100, 1.45 at 200 and 2.25 at 50, whose tight goal leaves too little free heap to
// be worth returning (docs/BENCHMARKS.md).
func tuneMemory(log *zap.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := cgroupMemoryLimit()
	if limit <= 0 {
		var si unix.Sysinfo_t
		if unix.Sysinfo(&si) == nil {
			limit = int64(si.Totalram) * int64(si.Unit)
		}
	}
	if limit <= 0 {
		return
	}
	debug.SetMemoryLimit(limit / 10 * 9)
	log.Info("memory limit", zap.Int64("bytes", limit/10*9))
}

func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n > 0 && n < 1<<50 {
			return n
		}
	}
	return 0
}

// releaseIdleMemory gives heap that the node no longer uses back to the OS, checking every
// interval until ctx is done. A node's live heap is small and steady (viewer structs), but a
// burst of connects (a ramp, a reconnect storm) leaves megabytes of freed request buffers that the
// runtime's background scavenger returns only slowly; resident memory per viewer is what limits a
// node, so the node returns them once the free part is both large and a real share of the heap.
// The cost is one forced collection, only after such a burst.
func releaseIdleMemory(ctx context.Context, interval time.Duration) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		free, live := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		if free > 8<<20 && free > live/4 {
			debug.FreeOSMemory()
		}
	}
}
