package procstat

import (
	"bufio"
	"math"
	"runtime"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	stat := `cpu  100 0 100 800 0 0 0 0 0 0
cpu0 10 0 10 80 0 0 0 0 0 0
cpu1 50 5 20 20 5 0 0 0 0 0
intr 1 2 3
`
	ct, err := parseStat(bufio.NewScanner(strings.NewReader(stat)), func(cpu int) bool { return cpu == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if ct.Busy != 75 || ct.Total != 100 {
		t.Fatalf("got %+v; want busy 75 of total 100 (cpu1 only)", ct)
	}
	if got := BusyPercent(CoreTimes{}, ct); math.Abs(got-75) > 1e-9 {
		t.Fatalf("BusyPercent = %v; want 75", got)
	}
}

func TestLiveReadings(t *testing.T) {
	if _, err := AllowedCoreTimes(); err != nil {
		t.Fatal(err)
	}
	if AllowedCPUs() < 1 {
		t.Fatal("AllowedCPUs < 1")
	}
	soft, err := RaiseNoFile()
	if err != nil {
		t.Fatal(err)
	}
	if _, hard := NoFile(); soft != hard {
		t.Fatalf("soft limit %d after raising; want the hard limit %d", soft, hard)
	}
	x := 0
	for i := range 2_000_000 {
		x += i
	}
	if CPU() <= 0 || x == 0 {
		t.Fatal("CPU() = 0 after spinning")
	}
}

// TestMemoryCountsTheHeap: a 64 MiB buffer, written and alive, is in the private part (heap), and
// the whole resident memory holds the private part. An absolute floor, not a before-and-after
// difference: the runtime may reuse pages an earlier test left resident.
func TestMemoryCountsTheHeap(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	rss, private := Memory()
	if private < 64<<20 {
		t.Fatalf("private memory %d bytes with a 64 MiB buffer alive; want at least 64 MiB", private)
	}
	if rss < private {
		t.Fatalf("resident %d < private %d", rss, private)
	}
	runtime.KeepAlive(buf)
}
