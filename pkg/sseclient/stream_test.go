package sseclient

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

const plainHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
const chunkedHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ntransfer-encoding: Chunked\r\n\r\n"

// frames returns n count frames for post 42 with counts 1..n, preceded by a retry field and with
// a heartbeat comment in the middle, as a fanout node sends them.
func frames(n int) []byte {
	b := sse.AppendRetry(nil, 2000)
	for i := 1; i <= n; i++ {
		u := update.Update{PostID: "42", Count: int64(i), TS: 1_700_000_000_000_000 + int64(i)}
		b = sse.AppendEvent(b, strconv.AppendInt(nil, u.Count, 10), sse.EventCount, u.AppendJSON(nil))
		if i == n/2 {
			b = append(b, sse.Ping...)
		}
	}
	return b
}

// chunk encodes body with chunked transfer coding in pieces of size n, with an extension on the
// first chunk.
func chunk(body []byte, n int) []byte {
	var b []byte
	for first := true; len(body) > 0; first = false {
		k := min(n, len(body))
		b = fmt.Appendf(b, "%x", k)
		if first {
			b = append(b, ";ext=1"...)
		}
		b = append(b, "\r\n"...)
		b = append(b, body[:k]...)
		b = append(b, "\r\n"...)
		body = body[k:]
	}
	return b
}

type collected struct {
	counts []int64
	retry  int64
}

func (c *collected) emit(e *sse.Event) {
	if e.Retry >= 0 {
		c.retry = e.Retry
	}
	if string(e.Event) != sse.EventCount {
		return
	}
	count, _, err := update.ParseCount(e.Data)
	if err != nil {
		panic(err)
	}
	c.counts = append(c.counts, count)
}

func feedSplit(t *testing.T, raw []byte, cuts ...int) (*collected, *Stream, error) {
	t.Helper()
	var s Stream
	c := &collected{retry: -1}
	prev := 0
	for _, cut := range append(cuts, len(raw)) {
		if err := s.Feed(raw[prev:cut], c.emit); err != nil {
			return c, &s, err
		}
		prev = cut
	}
	return c, &s, nil
}

func checkCounts(t *testing.T, c *collected, n int, where string) {
	t.Helper()
	if len(c.counts) != n {
		t.Fatalf("%s: got %d events; want %d", where, len(c.counts), n)
	}
	for i, got := range c.counts {
		if got != int64(i+1) {
			t.Fatalf("%s: event %d count %d; want %d", where, i, got, i+1)
		}
	}
	if c.retry != 2000 {
		t.Fatalf("%s: retry %d; want 2000", where, c.retry)
	}
}

func TestFeedEverySplitPoint(t *testing.T) {
	tests := []struct {
		name string
		give []byte
		want int
	}{
		{"plain", append([]byte(plainHead), frames(6)...), 6},
		{"chunked", append([]byte(chunkedHead), chunk(frames(6), 37)...), 6},
		{"chunked one byte chunks", append([]byte(chunkedHead), chunk(frames(3), 1)...), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			for cut := 0; cut <= len(tt.give); cut++ {
				c, _, err := feedSplit(t, tt.give, cut)
				if err != nil {
					t.Fatalf("split at %d: %v", cut, err)
				}
				checkCounts(t, c, want, fmt.Sprintf("split at %d", cut))
			}
			for cut := 1; cut < len(tt.give); cut += 5 {
				for second := cut; second <= len(tt.give); second += 17 {
					c, _, err := feedSplit(t, tt.give, cut, second)
					if err != nil {
						t.Fatalf("split at %d,%d: %v", cut, second, err)
					}
					checkCounts(t, c, want, fmt.Sprintf("split at %d,%d", cut, second))
				}
			}
		})
	}
}

func TestFeedByteAtATime(t *testing.T) {
	raw := append([]byte(chunkedHead), chunk(frames(20), 50)...)
	var s Stream
	c := &collected{retry: -1}
	for i := range raw {
		if err := s.Feed(raw[i:i+1], c.emit); err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
	checkCounts(t, c, 20, "byte at a time")
	if s.Comments() != 1 {
		t.Fatalf("comments = %d; want 1 heartbeat", s.Comments())
	}
	if !s.Open() {
		t.Fatal("Open() = false after a 200 head")
	}
}

func TestFeedStatus(t *testing.T) {
	raw := []byte("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Type: application/json\r\n\r\n{\"error\":\"full\"}")
	_, s, err := feedSplit(t, raw, 20)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 503 {
		t.Fatalf("err = %v; want StatusError 503", err)
	}
	if s.Open() {
		t.Fatal("Open() = true after a 503 head")
	}
}

func TestFeedMalformed(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"bad status line", "SSH-2.0-OpenSSH\r\n\r\n"},
		{"bad chunk size", chunkedHead + "zz\r\ndata\r\n"},
		{"head too long", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxHead+10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := feedSplit(t, []byte(tt.give)); err == nil {
				t.Fatal("err = nil; want an error")
			}
		})
	}
}

func TestChunkedEnd(t *testing.T) {
	raw := append([]byte(chunkedHead), chunk(frames(2), 64)...)
	raw = append(raw, "0\r\n\r\n"...)
	c, _, err := feedSplit(t, raw)
	if !errors.Is(err, ErrEnd) {
		t.Fatalf("err = %v; want ErrEnd", err)
	}
	checkCounts(t, c, 2, "before end")
}

func TestFeedSteadyStateDoesNotAllocate(t *testing.T) {
	for _, head := range []string{plainHead, chunkedHead} {
		var s Stream
		emitted := 0
		emit := func(e *sse.Event) {
			if _, _, err := update.ParseCount(e.Data); err == nil {
				emitted++
			}
		}
		if err := s.Feed([]byte(head), emit); err != nil {
			t.Fatal(err)
		}
		body := frames(10)
		if head == chunkedHead {
			body = chunk(body, 100)
		}
		// Warm the decoder's buffers, then measure.
		_ = s.Feed(body, emit)
		if n := testing.AllocsPerRun(200, func() { _ = s.Feed(body, emit) }); n != 0 {
			t.Errorf("head %q: Feed allocates %v per call; want 0", head[:20], n)
		}
		if emitted == 0 {
			t.Fatal("no events decoded")
		}
	}
}

func FuzzFeed(f *testing.F) {
	f.Add([]byte(plainHead), frames(3), uint8(5))
	f.Add([]byte(chunkedHead), chunk(frames(3), 10), uint8(1))
	f.Fuzz(func(t *testing.T, head, body []byte, cut uint8) {
		raw := append(append([]byte{}, head...), body...)
		var whole, split Stream
		var a, b []string
		errWhole := whole.Feed(raw, func(e *sse.Event) { a = append(a, string(e.Data)) })
		k := int(cut) % (len(raw) + 1)
		errSplit := split.Feed(raw[:k], func(e *sse.Event) { b = append(b, string(e.Data)) })
		if errSplit == nil {
			errSplit = split.Feed(raw[k:], func(e *sse.Event) { b = append(b, string(e.Data)) })
		}
		if (errWhole == nil) != (errSplit == nil) {
			t.Fatalf("whole err %v, split err %v", errWhole, errSplit)
		}
		if errWhole == nil && fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("whole %q; split %q", a, b)
		}
	})
}
