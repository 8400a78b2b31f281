package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/likes/likes/loadgen/internal/procstat"
)

// maxHandshakes bounds connections being set up at once, so a fast ramp does not flood the
// nodes' accept queues (whose overflow looks like failed connections).
const maxHandshakes = 512

// maxReasons bounds the distinct failure reasons kept.
const maxReasons = 16

// maxFeed is the most posts one fanout stream may follow.
const maxFeed = 64

// Worker holds viewers and answers the coordinator's requests.
type Worker struct {
	posts      int
	feed       int            // posts per viewer (1: single-post streams)
	postIndex  map[string]int // post id -> index, for feed streams
	targets    []target       // per node
	paths      []string       // the stream path of a viewer, by its first post
	sources    []netip.Addr   // empty: the kernel's choice
	loops      []*loop        // one epoll reader per usable CPU
	handshakes chan struct{}  // semaphore of maxHandshakes

	mu      sync.Mutex // guards viewers, reasons, connectCancel
	viewers []*viewer
	reasons map[string]int
	// connectCancel stops the connecting in progress; abandon and shutdown call it.
	connectCancel context.CancelFunc

	wanted, pending, open, failedN, refused, droppedN atomic.Int64
	events, watching, reactions, malformed            atomic.Int64
	closing                                           atomic.Bool
	phase                                             atomic.Pointer[phase]

	reconnect bool   // Init.Reconnect
	moves     *moves // the reconnect storm's queue and counters

	connectors sync.WaitGroup // connector goroutines
}

// Serve reads requests from in and writes replies to out until a quit request, the end of in, or
// ctx is done; then it closes every viewer and waits for their goroutines.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &Worker{reasons: map[string]int{}, handshakes: make(chan struct{}, maxHandshakes), moves: newMoves()}
	ctx, cancel := context.WithCancel(ctx)
	defer w.shutdown()
	defer cancel()
	requests := make(chan Request)
	readErr := make(chan error, 1)
	go func() { // exits at the end of in, or when a request cannot be handed over because Serve returned
		readErr <- readRequests(ctx, in, requests)
	}()
	enc := json.NewEncoder(out)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return err
		case req := <-requests:
			if req.Op == OpQuit {
				return enc.Encode(Reply{})
			}
			rep := w.handle(ctx, req)
			if err := enc.Encode(rep); err != nil {
				return fmt.Errorf("write reply: %w", err)
			}
		}
	}
}

func readRequests(ctx context.Context, in io.Reader, out chan<- Request) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		select {
		case out <- req:
		case <-ctx.Done():
			return nil
		}
	}
	return sc.Err()
}

func (w *Worker) handle(ctx context.Context, req Request) Reply {
	var rep Reply
	var err error
	switch req.Op {
	case OpInit:
		err = w.init(ctx, req.Init)
	case OpConnect:
		err = w.connect(ctx, req.Connect)
	case OpStatus:
		rep.Status = w.status()
	case OpAbandon:
		w.abandon()
	case OpBegin:
		rep.Begin, err = w.begin(req.Begin)
	case OpConverge:
		rep.Converge, err = w.converge(ctx, req.Converge)
	case OpReport:
		rep.Report, err = w.report(req.Report)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

func (w *Worker) init(ctx context.Context, in *Init) error {
	if in == nil || len(in.Nodes) == 0 || len(in.Posts) == 0 {
		return errors.New("init needs nodes and posts")
	}
	if w.loops != nil {
		return errors.New("init twice")
	}
	feed := max(in.Feed, 1)
	if feed > len(in.Posts) || feed > maxFeed {
		return fmt.Errorf("a feed of %d posts needs at least that many posts and at most %d", feed, maxFeed)
	}
	targets, err := newTargets(ctx, in.Nodes)
	if err != nil {
		return err
	}
	w.paths = streamPaths(in.Posts, feed)
	w.feed, w.postIndex = feed, make(map[string]int, len(in.Posts))
	for p, id := range in.Posts {
		w.postIndex[id] = p
	}
	if w.sources, err = parseSources(in.Sources); err != nil {
		return err
	}
	timeout := time.Duration(in.DialTimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	maxFD, err := procstat.RaiseNoFile()
	if err != nil || maxFD == 0 || maxFD > 1<<24 {
		maxFD = 1 << 16
	}
	bufSize := in.ReadBuffer
	if bufSize <= 0 {
		bufSize = readBufferDefault
	}
	bufSize = max(bufSize, 16)
	w.targets, w.posts, w.reconnect = targets, len(in.Posts), in.Reconnect
	for range runtime.GOMAXPROCS(0) {
		l, err := newLoop(w, int(maxFD), bufSize, timeout)
		if err != nil {
			return err
		}
		w.loops = append(w.loops, l)
		go l.run() // exits when shutdown stops it
	}
	if w.reconnect {
		w.connectors.Add(1)
		go func() { // exits when shutdown closes the moves' stop
			defer w.connectors.Done()
			w.moves.run(w)
		}()
	}
	return nil
}

// connect starts a goroutine that launches the viewers at the requested rate and returns at once.
func (w *Worker) connect(ctx context.Context, c *Connect) error {
	if c == nil || w.targets == nil {
		return errors.New("connect needs init first")
	}
	cctx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	if w.connectCancel != nil {
		w.connectCancel()
	}
	w.connectCancel = cancel
	w.mu.Unlock()
	w.wanted.Add(int64(c.Count))
	w.pending.Add(int64(c.Count))
	w.connectors.Add(1)
	go func() { // exits when every viewer is launched or cctx is cancelled (abandon, shutdown)
		defer w.connectors.Done()
		w.launch(cctx, c)
	}()
	return nil
}

func (w *Worker) launch(ctx context.Context, c *Connect) {
	start := time.Now()
	for i := range c.Count {
		if c.Rate > 0 {
			due := start.Add(time.Duration(float64(i) / c.Rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
		}
		select {
		case w.handshakes <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			left := c.Count - i
			w.pending.Add(-int64(left))
			w.failedN.Add(int64(left))
			w.addReason("abandoned before connecting", left)
			return
		}
		w.start(w.newViewer(c.First + i))
	}
}

// start opens a viewer's socket and hands it to its loop.
func (w *Worker) start(v *viewer) {
	var source netip.Addr
	if len(w.sources) > 0 {
		source = w.sources[v.index%len(w.sources)]
	}
	fd, err := openSocket(source, w.targets[v.node].addr)
	if err != nil {
		v.fail(stateFailed, reason(err))
		return
	}
	if err := w.loopOf(v).add(v, fd); err != nil {
		_ = unix.Close(fd)
		v.fail(stateFailed, reason(err))
	}
}

// newViewer returns viewer index on its node: (index / posts) mod nodes.
func (w *Worker) newViewer(index int) *viewer {
	return w.newViewerAt(index, (index/w.posts)%len(w.targets))
}

// newViewerAt returns viewer index, of post index mod posts, on node.
func (w *Worker) newViewerAt(index, node int) *viewer {
	v := &viewer{
		w:     w,
		index: index,
		node:  node,
		fd:    -1,
		last:  make([]atomic.Int64, w.feed),
	}
	for k := range v.last {
		v.last[k].Store(-1)
	}
	v.rx.Store(-1)
	v.emitFn = v.emit
	w.mu.Lock()
	w.viewers = append(w.viewers, v)
	w.mu.Unlock()
	return v
}

// loopOf returns the loop that reads v's socket.
func (w *Worker) loopOf(v *viewer) *loop { return w.loops[v.shard()%len(w.loops)] }

// opened is called once by a viewer whose head said 200.
func (w *Worker) opened(v *viewer) {
	if v.state.CompareAndSwap(statePending, stateOpen) {
		<-w.handshakes
		w.pending.Add(-1)
		w.open.Add(1)
		if v.moved {
			w.moves.open.Add(1)
		}
	}
}

// failed is called once by a viewer that never opened.
func (w *Worker) failed(state int32, why string) {
	<-w.handshakes
	w.pending.Add(-1)
	if state == stateRefused {
		w.refused.Add(1)
		return
	}
	w.failedN.Add(1)
	w.addReason(why, 1)
}

// dropped is called once by an open viewer whose connection ended.
func (w *Worker) dropped(v *viewer, why string) {
	if v.state.CompareAndSwap(stateOpen, stateDropped) {
		w.open.Add(-1)
		w.droppedN.Add(1)
		w.addReason("dropped: "+why, 1)
	}
}

func (w *Worker) addReason(why string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.reasons[why]; ok || len(w.reasons) < maxReasons {
		w.reasons[why] += n
	}
}

func (w *Worker) status() *Status {
	st := &Status{
		Wanted:    int(w.wanted.Load()),
		Pending:   int(w.pending.Load()),
		Open:      int(w.open.Load()),
		Failed:    int(w.failedN.Load()),
		Refused:   int(w.refused.Load()),
		Dropped:   int(w.droppedN.Load()),
		Events:    w.events.Load(),
		Watching:  w.watching.Load(),
		Reactions: w.reactions.Load(),
		Malformed: w.malformed.Load(),
		CPUMicros: procstat.CPU().Microseconds(),
		AtUS:      time.Now().UnixMicro(),

		Moved:          int(w.moves.n.Load()),
		MovedOpen:      int(w.moves.open.Load()),
		MovedFirstUS:   w.moves.first.Load(),
		MovedCurrentUS: w.moves.latest.Load(),
	}
	st.NoFileSoft, _ = procstat.NoFile()
	_, st.PrivateBytes = procstat.Memory()
	w.mu.Lock()
	if len(w.reasons) > 0 {
		st.Errors = make(map[string]int, len(w.reasons))
		for k, n := range w.reasons {
			st.Errors[k] = n
		}
	}
	w.mu.Unlock()
	return st
}

// abandon stops launching viewers and ends the handshakes still in progress.
func (w *Worker) abandon() {
	w.mu.Lock()
	if w.connectCancel != nil {
		w.connectCancel()
	}
	w.mu.Unlock()
	for _, l := range w.loops {
		l.abandon.Store(true)
	}
}

func (w *Worker) begin(b *Begin) (*BeginReply, error) {
	if b == nil || len(b.Base) != w.posts {
		return nil, fmt.Errorf("begin needs a base count for each of %d posts", w.posts)
	}
	w.phase.Store(newPhase(b))
	rep := &BeginReply{Viewers: make([]int, w.posts)}
	var measured []*viewer
	for _, v := range w.snapshot() {
		open := v.state.Load() == stateOpen
		v.inPhase.Store(open)
		v.frames.Store(0)
		v.sample.Store(nil)
		if open {
			measured = append(measured, v)
			rep.Open++
			for k := range v.last {
				rep.Viewers[(v.post()+k)%w.posts]++
			}
		}
	}
	// Sampled viewers are spread evenly over the measured ones, and so over posts and nodes.
	if n := min(b.SampleViewers, len(measured)); n > 0 && w.feed == 1 {
		for i := range n {
			measured[i*len(measured)/n].sample.Store(&arrivals{})
		}
	}
	return rep, nil
}

func (w *Worker) snapshot() []*viewer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.viewers
}

// converge polls the phase's viewers until each shows its post's final count or the timeout.
func (w *Worker) converge(ctx context.Context, c *Converge) (*ConvergeReply, error) {
	if c == nil || len(c.Final) != w.posts || (c.FinalReactions != nil && len(c.FinalReactions) != w.posts) {
		return nil, fmt.Errorf("converge needs a final count for each of %d posts", w.posts)
	}
	start := time.Now()
	deadline := start.Add(time.Duration(c.TimeoutMS) * time.Millisecond)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		rep := &ConvergeReply{ElapsedMS: time.Since(start).Milliseconds()}
		for _, v := range w.snapshot() {
			if !v.inPhase.Load() {
				continue
			}
			rep.Total++
			if w.converged(v, c.Final, c.FinalReactions) {
				rep.Converged++
			}
		}
		if rep.Converged == rep.Total || time.Now().After(deadline) {
			return rep, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return rep, ctx.Err()
		}
	}
}

// converged reports whether v shows the final count of every post it follows and, given
// reactions, its post's final reactions.
func (w *Worker) converged(v *viewer, final, reactions []int64) bool {
	for k := range v.last {
		if v.last[k].Load() != final[(v.post()+k)%w.posts] {
			return false
		}
	}
	return reactions == nil || v.rx.Load() == reactions[v.post()]
}

func (w *Worker) report(r *ReportRange) (*Report, error) {
	ph := w.phase.Load()
	if ph == nil || r == nil {
		return nil, errors.New("report needs a phase begun")
	}
	rep := ph.report(r)
	rep.Displays, rep.Sampled = w.displays()
	return rep, nil
}

// displays sums the phase's single-post viewers' frames per post and node, and copies the sampled
// viewers' records.
func (w *Worker) displays() ([]Display, []Sampled) {
	type key struct{ post, node int }
	at := map[key]int{}
	var out []Display
	var sampled []Sampled
	for _, v := range w.snapshot() {
		if !v.inPhase.Load() || len(v.last) != 1 {
			continue
		}
		if a := v.sample.Load(); a != nil {
			if frames := a.copy(); len(frames) > 0 {
				sampled = append(sampled, Sampled{Post: v.post(), Frames: frames})
			}
		}
		n := v.frames.Load()
		k := key{v.post(), v.node}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Display{Post: v.post(), Node: v.node, Frames: map[int64]int{}})
		}
		d := &out[i]
		d.Viewers++
		d.Frames[n]++
	}
	return out, sampled
}

// shutdown stops connecting, then stops every loop, which closes its viewers' sockets.
func (w *Worker) shutdown() {
	w.closing.Store(true)
	w.abandon()
	close(w.moves.stop)
	w.connectors.Wait()
	for _, l := range w.loops {
		l.shutdown()
	}
}
