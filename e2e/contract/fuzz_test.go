package contract

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/likes/likes/testkit/redistest"
)

var (
	budget = flag.Duration("contract.budget", 45*time.Second,
		"how long TestContractFuzz sends requests; the draws left when it is spent send none (0: no limit, -rapid.checks decides)")
	opsFilter    = flag.String("contract.ops", "", "a regular expression: draw only the operations whose \"target METHOD /path\" it matches (e.g. timeline)")
	replyTimeout = flag.Duration("contract.timeout", 5*time.Second, "time allowed for one reply (for a stream: its status and headers)")
)

// defaultChecks is how many draws the fuzz makes unless -rapid.checks (or RAPID_CHECKS) says. On
// this 2-core machine with the race detector on, 5,000 take about 25 s, so the default run ends
// at 10,000 or at the budget (-contract.budget, 45 s) on a loaded machine, whichever comes first.
const defaultChecks = 10000

// adminToken is the writer's ADMIN_TOKEN for the run (at least 32 characters).
const adminToken = "contract-fuzz-admin-token-0123456789abcdef"

// writerEnv runs the writer in its default identity mode (sessions: a like needs a session token,
// X-User-ID is ignored) with the admin API on and every per-address and new-post limit off: all
// the fuzz's requests come from one address, and with the limits on most draws would only
// measure the limiter's 429. The per-user reaction interval stays (a documented 429).
var writerEnv = []string{"ADMIN_TOKEN=" + adminToken, "LIKE_ADDR_RATE=off", "READ_ADDR_RATE=off", "NEW_POST_RATE=off", "NEW_POST_ADDR_RATE=off",
	"USER_DATA_ADDR_RATE=off", "SESSION_RATE=off", "SESSION_REFRESH_RATE=off"}

// TestContractFuzz is the property: whatever operation of the documents a client calls, with
// whatever identity and parameters, the reply comes within the timeout, is no 5xx but a
// documented 503, conforms to the document, and both services survive it; and after the run
// their memory and Redis's are back within bounds of the start (memory_test.go).
func TestContractFuzz(t *testing.T) {
	configureRapid(t)
	rdb := redistest.Start(t)
	writer := startService(t, "writer-svc", append([]string{"REDIS_URL=" + rdb.URL}, writerEnv...)...)
	fanout := startService(t, "fanout-svc", "REDIS_URL="+rdb.URL)
	f := newFuzzer(t, writer, fanout)
	rc := rdb.Client(t)
	redisBase, err := usedMemory(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	wd := startWatchdog(hardCap, writer, fanout)
	t.Cleanup(wd.stop)

	f.start = time.Now()
	rapid.Check(t, f.draw)
	t.Logf("sent %d requests in %v (%d writes); replies by operation:\n%s", f.sent, time.Since(f.start).Round(time.Millisecond), f.writes, f.summary())
	f.report()
	checkMemory(t, rc, redisBase, f.writes, writer, fanout)
}

// configureRapid sets rapid's flags that the command line left alone: defaultChecks draws, no
// fail files (they would land in testdata/ and replay on every run), 10 s of shrinking (rapid's
// 30 s overshoots by minutes when each failing draw kills a service), and a seed chosen here and
// logged first, so that any run, failed or not, can be repeated with -rapid.seed.
func configureRapid(t *testing.T) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.checks"] && os.Getenv("RAPID_CHECKS") == "" {
		must(t, flag.Set("rapid.checks", strconv.Itoa(defaultChecks)))
	}
	if !set["rapid.nofailfile"] && os.Getenv("RAPID_NOFAILFILE") == "" {
		must(t, flag.Set("rapid.nofailfile", "true"))
	}
	if !set["rapid.shrinktime"] && os.Getenv("RAPID_SHRINKTIME") == "" { // a shrink step may restart a service
		must(t, flag.Set("rapid.shrinktime", "10s"))
	}
	if flag.Lookup("rapid.seed").Value.String() == "0" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		must(t, flag.Set("rapid.seed", strconv.FormatUint(binary.LittleEndian.Uint64(b[:])|1, 10)))
	}
	t.Logf("rapid seed %s, %s checks, budget %v: rerun with -run '^%s$' -rapid.seed=%[1]s",
		flag.Lookup("rapid.seed").Value, flag.Lookup("rapid.checks").Value, *budget, t.Name())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
