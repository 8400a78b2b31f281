package stream

import (
	"bytes"
	"testing"
	"time"

	"github.com/likes/likes/pkg/sse"
)

// TestPreamblesSpreadTheRetry: every preamble is the response head and one retry hint, the
// hints span retry to 1.5x retry, and no two are alike, so a crowd dropped together is spread
// over the whole jitter window when it returns.
func TestPreamblesSpreadTheRetry(t *testing.T) {
	const retry = 2 * time.Second
	seen := map[int64]bool{}
	lo, hi := int64(-1), int64(0)
	for _, p := range newPreambles(retry) {
		body, ok := bytes.CutPrefix(p, []byte(responseHead))
		if !ok {
			t.Fatalf("preamble %q does not start with the response head", p)
		}
		var got []int64
		var dec sse.Decoder
		if err := dec.Feed(body, func(e *sse.Event) { got = append(got, e.Retry) }); err != nil || len(got) != 1 {
			t.Fatalf("preamble body %q: %d events, %v; want one retry hint", body, len(got), err)
		}
		ms := got[0]
		if seen[ms] {
			t.Errorf("retry %d ms twice", ms)
		}
		seen[ms] = true
		if lo < 0 || ms < lo {
			lo = ms
		}
		hi = max(hi, ms)
	}
	if lo != retry.Milliseconds() || hi != retry.Milliseconds()*3/2 {
		t.Errorf("retry hints span %d-%d ms; want %d-%d", lo, hi, retry.Milliseconds(), retry.Milliseconds()*3/2)
	}
}
