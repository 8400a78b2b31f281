package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/likes/likes/writer-svc/internal/ratelimit"
)

// A like's rate limits (the client address's bucket, LIKE_ADDR_RATE, and the user's, LIKE_RATE)
// ride in its batch's own script call on one Redis (changeScript): a call of their own per like
// would halve a writer's likes, and a batch's likes mostly share one address's bucket or few. The
// handler takes each bucket (ratelimit.Limiter.Take, which refuses a key Redis refused lately
// without any call), the script spends the tokens in the batch's order, and the handler settles
// each bucket with what the script found (Result.Waits). On a Cluster the buckets live in other
// slots than the post, so there the handler asks each limiter in a call of its own (Allow).

// limits numbers the distinct buckets of the changes' Limits from 1, in order of first use, and
// returns them with two numbers per change, its Limits' buckets (0 for a zero one): the script's
// buckets and gates (changeScript). Both are nil when no change has a limit.
func limits(changes []Change) (buckets []ratelimit.Bucket, gates []int) {
	var number map[string]int // bucket key -> its number
	for i, c := range changes {
		for j, b := range c.Limits {
			if b.Zero() {
				continue
			}
			if gates == nil {
				gates, number = make([]int, 2*len(changes)), make(map[string]int, 2)
			}
			k, ok := number[b.Key]
			if !ok {
				buckets = append(buckets, b)
				k = len(buckets)
				number[b.Key] = k
			}
			gates[2*i+j] = k
		}
	}
	return buckets, gates
}

// appendGates appends gates as the script reads them: runs of changes with the same two
// buckets, each "count address user", separated by spaces. A batch's likes mostly come from few
// addresses, one bucket each, and the script spends a run of one bucket in one step (takeRun in
// changeScript) rather than a token at a time.
func appendGates(dst []byte, gates []int) []byte {
	for i := 0; i < len(gates); {
		a, u := gates[i], gates[i+1]
		run := 1
		for i+2*run < len(gates) && gates[i+2*run] == a && gates[i+2*run+1] == u {
			run++
		}
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendInt(dst, int64(run), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(a), 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, int64(u), 10)
		i += 2 * run
	}
	return dst
}

// waitList is how long each bucket of a call stays empty after it, by bucket number less one.
type waitList []time.Duration

// bucketWaits reads the script's buckets, a comma-separated number of microseconds per bucket;
// nil when the call had none (gates nil).
func bucketWaits(v any, gates []int) (waitList, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%w: buckets %T; want a string", errReply, v)
	}
	if gates == nil {
		if s != "" {
			return nil, fmt.Errorf("%w: buckets %q for none", errReply, s)
		}
		return nil, nil
	}
	want := 0
	for _, g := range gates {
		want = max(want, g)
	}
	out := make(waitList, 0, want)
	for f := range strings.SplitSeq(s, ",") {
		us, err := strconv.ParseInt(f, 10, 64)
		if err != nil || us < 0 {
			return nil, fmt.Errorf("%w: buckets %q", errReply, s)
		}
		out = append(out, time.Duration(us)*time.Microsecond)
	}
	if len(out) != want {
		return nil, fmt.Errorf("%w: buckets %q for %d", errReply, s, want)
	}
	return out, nil
}

// of returns the waits of change i's two buckets (0 for none).
func (w waitList) of(gates []int, i int) (out [2]time.Duration) {
	for j := range out {
		if g := gates[2*i+j]; g > 0 {
			out[j] = w[g-1]
		}
	}
	return out
}
