package likes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/loadgen/internal/hist"
)

// Load sends likes to one writer.
type Load struct {
	client   *http.Client
	writer   string
	posts    []string
	userBase string
	seq      atomic.Int64
	rec      *Recorder
}

// New returns a load against writer (base URL) for posts. userPrefix makes user ids unique to this
// run; maxConns bounds the connections to the writer.
func New(writer string, posts []string, userPrefix string, maxConns int, timeout time.Duration) *Load {
	tr := &http.Transport{
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Load{
		client:   &http.Client{Transport: tr, Timeout: timeout},
		writer:   writer,
		posts:    posts,
		userBase: userPrefix,
		rec:      NewRecorder(len(posts)),
	}
}

// Recorder returns where the load records its likes.
func (l *Load) Recorder() *Recorder { return l.rec }

// Close releases idle connections.
func (l *Load) Close() { l.client.CloseIdleConnections() }

// Closed runs writers closed-loop writers until ctx is done; it returns when all have stopped.
// A like in flight when ctx ends is allowed to finish (within the client's timeout), so stopping
// the load does not turn stored likes into errors.
func (l *Load) Closed(ctx context.Context, writers int) {
	var wg sync.WaitGroup
	reqCtx := context.WithoutCancel(ctx)
	for w := range writers {
		wg.Go(func() { // exits when ctx is done
			for k := w; ctx.Err() == nil; k += writers {
				l.like(reqCtx, k%len(l.posts))
			}
		})
	}
	wg.Wait()
}

// Open sends rate likes per second until ctx is done, at most maxInflight at once; a like that
// would exceed it is counted as skipped (the writer is not keeping up). It returns when every
// like sent has been answered.
func (l *Load) Open(ctx context.Context, rate float64, maxInflight int) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxInflight)
	reqCtx := context.WithoutCancel(ctx)
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			// A tick read after ctx's deadline (the loop was descheduled and select chose the
			// tick over Done) must not send what falls due after it.
			if dl, ok := ctx.Deadline(); ok && now.After(dl) {
				now = dl
			}
			due := int(rate * now.Sub(start).Seconds())
			for ; sent < due; sent++ {
				select {
				case slots <- struct{}{}:
				default:
					l.rec.skipped.Add(1)
					continue
				}
				post := sent % len(l.posts)
				wg.Go(func() { // exits when the like is answered or times out
					defer func() { <-slots }()
					l.like(reqCtx, post)
				})
			}
		}
	}
}

type answer struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	Liked  bool   `json:"liked"`
}

// like sends one like to post p by a fresh user and records the outcome.
func (l *Load) like(ctx context.Context, p int) {
	user := l.userBase + strconv.FormatInt(l.seq.Add(1), 36)
	start := time.Now()
	count, err := l.send(ctx, l.posts[p], user)
	l.rec.record(p, count, err, start, time.Now())
}

func (l *Load) send(ctx context.Context, post, user string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.writer+"/like/"+post, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-User-ID", user)
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, fmt.Errorf("decode answer: %w", err)
	}
	if !a.Liked {
		return 0, fmt.Errorf("like by fresh user %s not counted", user)
	}
	return a.Count, nil
}

// Recorder keeps what the likes did: per post the highest acknowledged count (which, with fresh
// users, numbers the likes), and for acknowledgements inside the measurement window their number
// and latency.
type Recorder struct {
	maxCount []atomic.Int64 // per post
	acked    atomic.Int64
	errors   atomic.Int64
	skipped  atomic.Int64

	mu        sync.Mutex
	lastError string

	window atomic.Pointer[Window]
}

// Window is the likes acknowledged between Start and End.
type Window struct {
	Start, End time.Time
	Acked      atomic.Int64
	Errors     atomic.Int64
	Latency    hist.Histogram // microseconds
}

// NewRecorder returns a recorder for posts posts.
func NewRecorder(posts int) *Recorder { return &Recorder{maxCount: make([]atomic.Int64, posts)} }

// SetWindow makes w receive the acknowledgements that fall within it.
func (r *Recorder) SetWindow(w *Window) { r.window.Store(w) }

// MaxCounts returns per post the highest count acknowledged so far.
func (r *Recorder) MaxCounts() []int64 {
	out := make([]int64, len(r.maxCount))
	for i := range r.maxCount {
		out[i] = r.maxCount[i].Load()
	}
	return out
}

// Totals returns likes acknowledged, failed, and skipped (open loop at its in-flight limit).
func (r *Recorder) Totals() (acked, errors, skipped int64) {
	return r.acked.Load(), r.errors.Load(), r.skipped.Load()
}

// LastError returns the most recent like error, if any.
func (r *Recorder) LastError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastError
}

func (r *Recorder) record(p int, count int64, err error, start, end time.Time) {
	w := r.window.Load()
	in := w != nil && !end.Before(w.Start) && end.Before(w.End)
	if err != nil {
		r.errors.Add(1)
		if in {
			w.Errors.Add(1)
		}
		r.mu.Lock()
		r.lastError = err.Error()
		r.mu.Unlock()
		return
	}
	r.acked.Add(1)
	for {
		old := r.maxCount[p].Load()
		if count <= old || r.maxCount[p].CompareAndSwap(old, count) {
			break
		}
	}
	if in {
		w.Acked.Add(1)
		w.Latency.Record(end.Sub(start).Microseconds())
	}
}
