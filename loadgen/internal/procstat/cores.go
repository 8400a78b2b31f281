package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CoreTimes is the busy and total jiffies of a set of CPUs, from /proc/stat.
type CoreTimes struct{ Busy, Total uint64 }

// AllowedCoreTimes sums /proc/stat over the CPUs this process may run on: the share of that time
// spent busy tells whether the generator's cores (which it may share with Redis and the writer)
// were saturated, whatever process used them.
func AllowedCoreTimes() (CoreTimes, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return CoreTimes{}, err
	}
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CoreTimes{}, err
	}
	defer f.Close()
	return parseStat(bufio.NewScanner(f), set.IsSet)
}

func parseStat(sc *bufio.Scanner, allowed func(int) bool) (CoreTimes, error) {
	var ct CoreTimes
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(fields[0][3:])
		if err != nil || !allowed(cpu) {
			continue
		}
		for i, v := range fields[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			if i >= 7 { // guest time is already counted in user time
				break
			}
			ct.Total += n
			if i != 3 && i != 4 { // idle, iowait
				ct.Busy += n
			}
		}
	}
	return ct, sc.Err()
}

// BusyPercent returns the busy share of the allowed CPUs between two readings, in percent of all
// of them (100 = every allowed CPU fully busy).
func BusyPercent(a, b CoreTimes) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return float64(b.Busy-a.Busy) / float64(b.Total-a.Total) * 100
}
