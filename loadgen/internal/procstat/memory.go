package procstat

import (
	"bytes"
	"os"
	"strconv"
)

// Memory returns this process's resident memory, all of it and its private part: resident less
// the file-backed and shared pages, that is its heap, stacks and the runtime's own. The
// generator's workers run one binary, whose pages are in memory once however many processes map
// it: the workers' private memory plus one process's whole RSS counts every page once, where a sum
// of RSS counts the program once per worker (tens of MiB at a million viewers). It reads
// /proc/self/statm, counters the kernel keeps, so a status call can afford it (smaps walks the
// page tables). Both are 0 where there is no /proc.
func Memory() (rss, private int64) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0
	}
	// size resident shared text lib data dt, in pages
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, 0
	}
	resident, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	page := int64(os.Getpagesize())
	return resident * page, (resident - shared) * page
}
