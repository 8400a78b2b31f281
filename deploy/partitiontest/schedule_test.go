package partitiontest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestRandomSchedule runs a seeded random sequence of the faults on one cluster for
// LIKES_NEMESIS_MINUTES (skipped when unset): each round picks a fault, injects it while clients
// work on posts of the round's own, heals, settles and checks the round's history as
// TestPartitions does, so that a fault meets a cluster another fault left behind (a failed-over
// primary, a restarted replica). LIKES_NEMESIS_SEED picks the sequence (a new one, printed, when
// unset): the same seed replays the same faults in the same order.
func TestRandomSchedule(t *testing.T) {
	enabled(t)
	minutes, err := strconv.ParseFloat(os.Getenv("LIKES_NEMESIS_MINUTES"), 64)
	if err != nil || minutes <= 0 {
		t.Skip("a random schedule runs with LIKES_NEMESIS_MINUTES=N (and LIKES_NEMESIS_SEED=S to replay one)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LIKES_NEMESIS_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("LIKES_NEMESIS_SEED=%q: %v", s, err)
		}
	}
	t.Logf("nemesis-seed %d (replay: LIKES_NEMESIS_SEED=%[1]d)", seed)
	rnd := rand.New(rand.NewPCG(seed, 35))
	c := startCluster(t, t.TempDir())
	deadline := time.Now().Add(time.Duration(minutes * float64(time.Minute)))
	for i := 0; time.Now().Before(deadline); i++ {
		sc := scenarios[rnd.IntN(len(scenarios))]
		t.Logf("round %d: %s", i, sc.name)
		c.round(t, sc, fmt.Sprintf("r%d-%s", i, sc.name))
		if t.Failed() {
			return // the cluster after a failed round is no ground for the next
		}
	}
}
