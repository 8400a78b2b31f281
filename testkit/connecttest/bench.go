package connecttest

import (
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// profileEnv names a directory: with it set, Bench writes a CPU profile of its timed rounds
// alone (not of the held streams' setup, the releases between rounds or the cleanup) there, one
// file per benchmark. Run without -cpuprofile then, and with a -benchtime of one round.
const profileEnv = "LIKES_CONNECTTEST_PROFILE"

// MaxOpen is how many streams a benchmark keeps open at most: the server's ends, its listener and
// its Redis connections must fit in the 20,000 descriptors one process may hold here.
const MaxOpen = 19_000

// Bench opens b.N streams beside hold streams opened (and held) before the timer starts, and
// reports this process's CPU time per stream opened as cpu-µs/connect: with the client ends in
// the child, that is what the server spent on each connect, from accept to the first frame and
// whatever work the connect left behind by the time the last stream read its frame. The streams
// are opened in rounds of at most MaxOpen-hold; between rounds, with the timer and the CPU clock
// stopped, the child closes the round's streams and release(n) must return once the server has
// let go of those n.
func Bench(b *testing.B, d *Dialer, hold int, release func(n int)) {
	b.Helper()
	if err := d.Open(hold); err != nil {
		b.Fatal(err)
	}
	round := MaxOpen - hold
	if round < 1 {
		b.Fatalf("hold %d leaves no room under %d open streams", hold, MaxOpen)
	}
	var cpu time.Duration
	stop := startProfile(b)
	defer stop()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, round)
		cpu0 := ProcessCPU()
		if err := d.Open(n); err != nil {
			b.Fatal(err)
		}
		cpu += ProcessCPU() - cpu0
		left -= n
		if left == 0 {
			break
		}
		b.StopTimer()
		if err := d.Close(n); err != nil {
			b.Fatal(err)
		}
		release(n)
		b.StartTimer()
	}
	b.StopTimer()
	stop()
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/connect")
}

// ProcessCPU returns the user and system CPU time this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startProfile starts the CPU profile profileEnv asks for and returns what stops it (once).
func startProfile(b *testing.B) (stop func()) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(dir + "/" + strings.NewReplacer("/", "_", "=", "").Replace(b.Name()) + ".prof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	done := false
	return func() {
		if !done {
			done = true
			pprof.StopCPUProfile()
			f.Close()
		}
	}
}
