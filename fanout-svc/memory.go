package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// tuneMemory sets a soft memory limit when GOMEMLIMIT is not set: 90% of the container's cgroup
// limit, or of the machine's memory. A fanout node's heap is many small long-lived objects (one
// viewer struct per connection); with a limit the collector can run lazily (GOGC as configured,
// default 100) while memory is plentiful and harder only near the limit, instead of the node being
// killed for exceeding its container.
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
