package hub

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/likes/likes/pkg/sse"
)

// shard is one event loop. Everything below the inbox fields is owned by the shard goroutine.
type shard struct {
	id     int
	hub    *Hub
	cfg    Config
	poller *poller
	epoch  time.Time

	// Inbox, written by any goroutine under mu; woken avoids one eventfd write per Publish.
	mu        sync.Mutex
	dirty     map[*Post]struct{}
	adds      []*Viewer
	stopping  bool
	drainReq  time.Duration
	woken     atomic.Bool
	spareDirt map[*Post]struct{}
	spareAdds []*Viewer

	// Owned by the loop.
	now          int64
	posts        map[*Post]*shardPost
	viewers      map[int]*viewer
	doomed       []*viewer
	scratch      []byte
	readBuf      []byte
	batchPosts   []*shardPost
	batchViewers []*viewer
	frameBuf     []*frame
	flushAt      int64
	held         []*shardPost
	nextTick     int64
	tick         int64
	drainStart   int64
	drainEnd     int64
	drainTotal   int
	draining     bool
	counts       counts
}

func newShard(id int, h *Hub) (*shard, error) {
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	tick := h.cfg.Heartbeat / 4
	tick = max(10*time.Millisecond, min(tick, time.Second))
	return &shard{
		id: id, hub: h, cfg: h.cfg, poller: p, epoch: time.Now(),
		dirty: make(map[*Post]struct{}), spareDirt: make(map[*Post]struct{}),
		posts: make(map[*Post]*shardPost), viewers: make(map[int]*viewer),
		scratch: make([]byte, 0, 4096), readBuf: make([]byte, 512),
		tick: int64(tick),
	}, nil
}

// markDirty tells the shard that p has a newer frame. Called by Publish from any goroutine.
func (s *shard) markDirty(p *Post) {
	s.mu.Lock()
	s.dirty[p] = struct{}{}
	s.mu.Unlock()
	s.wake()
}

func (s *shard) add(v *Viewer) {
	s.mu.Lock()
	s.adds = append(s.adds, v)
	s.mu.Unlock()
	s.wake()
}

func (s *shard) startDrain(window time.Duration) {
	s.mu.Lock()
	s.drainReq = max(window, time.Millisecond)
	s.mu.Unlock()
	s.wake()
}

func (s *shard) stop() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.wake()
}

func (s *shard) wake() {
	if s.woken.CompareAndSwap(false, true) {
		s.poller.wake()
	}
}

func (s *shard) clock() int64 { return int64(time.Since(s.epoch)) }

// run is the event loop. It returns after stop, having closed every viewer and the poller.
func (s *shard) run() {
	defer s.shutdown()
	s.now = s.clock()
	s.nextTick = s.now + s.tick
	for {
		events := s.poller.wait(s.timeoutMs())
		s.now = s.clock()
		woken := false
		for _, ev := range events {
			fd := int(ev.Fd)
			if fd == s.poller.wakefd {
				woken = true
				continue
			}
			if v := s.viewers[fd]; v != nil {
				s.onSocketEvent(v, ev.Events)
			}
		}
		s.reap()
		if woken && !s.processInbox() {
			return
		}
		s.runTimers()
		s.reap()
		s.counts.flushTo(&s.hub.stats)
	}
}

func (s *shard) onSocketEvent(v *viewer, events uint32) {
	if events&(unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		s.doom(v)
		return
	}
	if events&unix.EPOLLIN != 0 && readDiscard(v.fd, s.readBuf) {
		s.doom(v)
		return
	}
	if events&unix.EPOLLOUT != 0 && (v.blocked() || v.dirty != 0) {
		s.flushViewer(v)
	}
}

// processInbox applies what other goroutines asked for. It reports false when the shard must stop.
func (s *shard) processInbox() bool {
	s.poller.drainWake()
	s.woken.Store(false) // before taking the inbox: a later Publish wakes us again
	s.mu.Lock()
	dirty, adds, stopping, drain := s.dirty, s.adds, s.stopping, s.drainReq
	s.dirty, s.adds, s.drainReq = s.spareDirt, s.spareAdds[:0], 0
	s.mu.Unlock()
	if stopping {
		return false
	}
	for p := range dirty {
		s.collect(p)
	}
	clear(dirty)
	s.spareDirt = dirty
	for i, v := range adds {
		s.register(v)
		adds[i] = nil
	}
	s.spareAdds = adds
	if drain > 0 && !s.draining {
		s.draining = true
		s.drainStart, s.drainEnd, s.drainTotal = s.now, s.now+int64(drain), len(s.viewers)
	}
	return true
}

// collect appends p's frames that this shard has not processed yet to the post's current batch
// (or holds them for the rate cap). Batches are written by flushBatches: at once, or when the
// flush window closes.
func (s *shard) collect(p *Post) {
	sp := s.posts[p]
	if sp == nil {
		return
	}
	var seen uint64
	if sp.current != nil {
		seen = sp.current.seq
	}
	newest := p.latest.Load()
	if newest == nil || newest.seq <= seen {
		return
	}
	if s.cfg.PostRate > 0 {
		if s.now < sp.nextAllowed {
			if !sp.held {
				sp.held = true
				s.held = append(s.held, sp)
			}
			return
		}
		sp.nextAllowed = s.now + int64(float64(time.Second)/s.cfg.PostRate)
		// A capped post shows its newest value at the display rate, never its history.
		s.counts.conflated += int64(newest.seq-seen-1) * int64(len(sp.members))
		s.addToBatch(sp, newest)
		return
	}
	frames, skipped := p.since(seen, s.frameBuf[:0])
	s.counts.conflated += int64(skipped) * int64(len(sp.members))
	for i, f := range frames {
		s.addToBatch(sp, f)
		frames[i] = nil
	}
	s.frameBuf = frames[:0]
}

// owe marks slot i's newest frame as owed to v once its socket drains. A frame already owed is
// replaced, never queued: that replacement is a conflation.
func (s *shard) owe(v *viewer, i int) {
	bit := uint64(1) << uint(i)
	if v.dirty&bit != 0 {
		s.counts.conflated++
	}
	v.dirty |= bit
}

// write hands b (holding frames frames) to v's socket; what does not fit is copied to v.pending.
func (s *shard) write(v *viewer, b []byte, frames int64) {
	n, ok := s.writeSome(v, b)
	if !ok {
		return
	}
	s.counts.framesSent += frames
	if n < len(b) {
		v.pending = append(v.pending[:0], b[n:]...)
		if v.blockedSince == 0 {
			v.blockedSince = s.now
		}
	}
}

// writeSome writes what v's socket takes of b. A write error dooms v and reports false.
func (s *shard) writeSome(v *viewer, b []byte) (int, bool) {
	n, err := writeNonBlocking(v.fd, b)
	s.counts.writes++
	if err != nil {
		s.counts.writeErrors++
		s.doom(v)
		return 0, false
	}
	s.counts.bytes += int64(n)
	v.lastWrite = s.now
	return n, true
}

// flushViewer runs when v's socket may take more: the rest of the last write first, then the
// newest frame of every post owed to v, in one write.
func (s *shard) flushViewer(v *viewer) {
	if v.doomed {
		return
	}
	if len(v.pending) > 0 {
		n, ok := s.writeSome(v, v.pending)
		if !ok {
			return
		}
		if n < len(v.pending) {
			v.pending = v.pending[n:]
			return
		}
		v.pending = nil // an idle viewer keeps no buffer
		v.blockedSince = 0
	}
	if v.dirty == 0 {
		return
	}
	buf := s.scratch[:0]
	var frames int64
	for d := v.dirty; d != 0; d &= d - 1 {
		i := bits.TrailingZeros64(d)
		sl := &v.slots[i]
		if f := sl.sp.current; f != nil && f.u.TS > sl.sent {
			buf = append(buf, f.bytesFor(v.multi)...)
			sl.sent = f.u.TS
			frames++
		}
	}
	v.dirty = 0
	s.scratch = buf[:0]
	if len(buf) > 0 {
		s.write(v, buf, frames)
	}
	if !v.blocked() {
		v.blockedSince = 0
	}
}

// addToBatch appends f to the post's batch: the frames its viewers are owed at the next flush,
// concatenated once in both id forms and shared by every viewer. Past MaxBatchFrames the batch
// keeps only the newest frame: a viewer then gets the newest count, not the history.
func (s *shard) addToBatch(sp *shardPost, f *frame) {
	sp.current = f
	if !sp.inBatch {
		sp.inBatch = true
		sp.batchSingle, sp.batchMulti, sp.batchFrames = sp.batchSingle[:0], sp.batchMulti[:0], 0
		sp.batchFirstTS = f.u.TS
		s.batchPosts = append(s.batchPosts, sp)
		if s.cfg.FlushWindow > 0 && s.flushAt == 0 {
			s.flushAt = s.now + int64(s.cfg.FlushWindow)
		}
	}
	if sp.batchFrames >= s.cfg.MaxBatchFrames {
		s.counts.conflated += int64(sp.batchFrames * len(sp.members))
		sp.batchSingle, sp.batchMulti, sp.batchFrames = sp.batchSingle[:0], sp.batchMulti[:0], 0
		sp.batchFirstTS = f.u.TS
	}
	if len(sp.members) > sp.nMulti {
		sp.batchSingle = append(sp.batchSingle, f.single...)
	}
	if sp.nMulti > 0 {
		sp.batchMulti = append(sp.batchMulti, f.multi...)
	}
	sp.batchFrames++
}

// flushBatches writes each viewer's owed frames: one write per single-post viewer (the post's
// shared batch bytes), one write per multi-post viewer (its posts' batches concatenated).
func (s *shard) flushBatches() {
	for _, sp := range s.batchPosts {
		if sp.gone {
			continue
		}
		for _, m := range sp.members {
			v := m.v
			if v.doomed {
				continue
			}
			if v.multi {
				v.batchDirty |= 1 << uint(m.slot)
				if !v.inBatchList {
					v.inBatchList = true
					s.batchViewers = append(s.batchViewers, v)
				}
				continue
			}
			if v.blocked() {
				s.owe(v, 0)
				continue
			}
			if b, n := batchBytes(v, 0); len(b) > 0 {
				s.write(v, b, n)
			}
		}
	}
	for _, v := range s.batchViewers {
		v.inBatchList = false
		if v.doomed {
			v.batchDirty = 0
			continue
		}
		if v.blocked() {
			s.counts.conflated += int64(bits.OnesCount64(v.batchDirty & v.dirty))
			v.dirty |= v.batchDirty
			v.batchDirty = 0
			continue
		}
		buf := s.scratch[:0]
		var frames int64
		for d := v.batchDirty; d != 0; d &= d - 1 {
			b, n := batchBytes(v, bits.TrailingZeros64(d))
			buf = append(buf, b...)
			frames += n
		}
		v.batchDirty = 0
		s.scratch = buf[:0]
		if len(buf) > 0 {
			s.write(v, buf, frames)
		}
	}
	for i, sp := range s.batchPosts {
		sp.inBatch = false
		s.batchPosts[i] = nil
	}
	clear(s.batchViewers)
	s.batchPosts, s.batchViewers, s.flushAt = s.batchPosts[:0], s.batchViewers[:0], 0
}

// batchBytes returns what slot i of v is owed from its post's batch: every frame of the batch
// (shared bytes), or only the newest if v already had part of it (it joined mid-batch). It
// records the newest as sent.
func batchBytes(v *viewer, i int) ([]byte, int64) {
	sl := &v.slots[i]
	sp := sl.sp
	cur := sp.current
	if cur == nil || cur.u.TS <= sl.sent {
		return nil, 0
	}
	prev := sl.sent
	sl.sent = cur.u.TS
	if prev >= sp.batchFirstTS || sp.batchFrames == 0 {
		return cur.bytesFor(v.multi), 1
	}
	if v.multi {
		return sp.batchMulti, int64(sp.batchFrames)
	}
	return sp.batchSingle, int64(sp.batchFrames)
}

// register adopts a new viewer: links it to its posts, writes the preamble and the current state
// of each post (the newer of the snapshot and the hub's frame), and starts watching its socket.
func (s *shard) register(nv *Viewer) {
	fd, err := socketFD(nv.Conn)
	if err != nil {
		s.hub.log.Warn("adopt connection", zap.Error(err))
		_ = nv.Conn.Close()
		s.hub.Release(nv.Posts)
		s.hub.stats.Viewers.Add(-1)
		return
	}
	if s.cfg.SendBuffer > 0 {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, s.cfg.SendBuffer)
	}
	v := &viewer{fd: fd, conn: nv.Conn, multi: nv.Multi, slots: make([]slot, len(nv.Posts)), lastWrite: s.now, onClose: nv.OnClose}
	buf := append(s.scratch[:0], nv.Preamble...)
	var frames int64
	for i, p := range nv.Posts {
		sp := s.posts[p]
		if sp == nil {
			sp = &shardPost{post: p, current: p.latest.Load()}
			s.posts[p] = sp
		}
		v.slots[i] = slot{sp: sp, idx: len(sp.members)}
		sp.members = append(sp.members, member{v: v, slot: i})
		if v.multi {
			sp.nMulti++
		}
		state := nv.Snapshot[i]
		lf := p.latest.Load()
		if lf != nil && lf.u.TS >= state.TS {
			state = lf.u
		} else {
			lf = nil
		}
		v.slots[i].sent = state.TS
		if nv.Resume != nil && !nv.Resume(i, state) {
			continue
		}
		if lf != nil {
			buf = append(buf, lf.bytesFor(v.multi)...)
		} else {
			buf = appendSnapshotFrame(buf, state, v.multi)
		}
		frames++
	}
	s.scratch = buf[:0]
	s.viewers[fd] = v
	if err := s.poller.add(fd); err != nil {
		s.hub.log.Warn("epoll add", zap.Error(err))
		s.doom(v)
		return
	}
	s.write(v, buf, frames)
}

// runTimers handles the flush window, rate-capped posts, heartbeats, stalls and draining.
func (s *shard) runTimers() {
	if len(s.held) > 0 {
		s.releaseHeld()
	}
	if len(s.batchPosts) > 0 && (s.cfg.FlushWindow == 0 || s.now >= s.flushAt) {
		s.flushBatches()
	}
	if s.draining {
		s.drainStep()
	}
	if s.now >= s.nextTick {
		s.nextTick = s.now + s.tick
		s.sweep()
	}
}

func (s *shard) releaseHeld() {
	keep := s.held[:0]
	for _, sp := range s.held {
		if sp.gone {
			continue
		}
		if s.now < sp.nextAllowed {
			keep = append(keep, sp)
			continue
		}
		sp.held = false
		s.collect(sp.post)
	}
	clear(s.held[len(keep):])
	s.held = keep
}

// sweep pings viewers that heard nothing for a heartbeat interval and drops viewers whose socket
// has been full for longer than the stall timeout. One pass over the shard, no timer per viewer.
func (s *shard) sweep() {
	hb := int64(s.cfg.Heartbeat)
	stall := int64(s.cfg.StallTimeout)
	for _, v := range s.viewers {
		switch {
		case v.doomed:
		case v.blocked():
			if stall > 0 && s.now-v.blockedSince > stall {
				s.counts.stalled++
				s.doom(v)
			}
		case s.now-v.lastWrite >= hb:
			s.counts.heartbeats++
			s.write(v, sse.Ping, 0)
		}
	}
}

// drainStep closes the share of viewers due by now, each after a short jittered retry hint so
// that browsers reconnect (elsewhere) soon but not all at once.
func (s *shard) drainStep() {
	span := max(s.drainEnd-s.drainStart, 1)
	due := s.drainTotal
	if s.now < s.drainEnd {
		due = int(int64(s.drainTotal) * (s.now - s.drainStart) / span)
	}
	closed := s.drainTotal - len(s.viewers)
	for _, v := range s.viewers {
		if closed >= due {
			break
		}
		if v.doomed {
			continue
		}
		if !v.blocked() {
			var b [32]byte
			_, _ = writeNonBlocking(v.fd, sse.AppendRetry(b[:0], 250+rand.Int64N(1000)))
		}
		s.doom(v)
		closed++
	}
}

func (s *shard) timeoutMs() int {
	next := s.nextTick
	if s.flushAt != 0 {
		next = min(next, s.flushAt)
	}
	for _, sp := range s.held {
		next = min(next, sp.nextAllowed)
	}
	if s.draining {
		next = min(next, s.now+int64(10*time.Millisecond))
	}
	d := next - s.clock()
	if d <= 0 {
		return 0
	}
	return int((d + int64(time.Millisecond) - 1) / int64(time.Millisecond))
}

func (s *shard) doom(v *viewer) {
	if !v.doomed {
		v.doomed = true
		s.doomed = append(s.doomed, v)
	}
}

// reap removes doomed viewers. It runs between phases, never while a post's viewer list is being
// walked, because removal reorders that list.
func (s *shard) reap() {
	for i, v := range s.doomed {
		s.removeViewer(v)
		s.doomed[i] = nil
	}
	s.doomed = s.doomed[:0]
}

func (s *shard) removeViewer(v *viewer) {
	if s.viewers[v.fd] == v {
		delete(s.viewers, v.fd)
		s.poller.remove(v.fd)
	}
	_ = v.conn.Close()
	posts := make([]*Post, len(v.slots))
	for i, sl := range v.slots {
		sp := sl.sp
		posts[i] = sp.post
		last := len(sp.members) - 1
		moved := sp.members[last]
		sp.members[sl.idx] = moved
		moved.v.slots[moved.slot].idx = sl.idx
		sp.members[last] = member{}
		sp.members = sp.members[:last]
		if v.multi {
			sp.nMulti--
		}
		if len(sp.members) == 0 {
			sp.gone = true
			delete(s.posts, sp.post)
		}
	}
	v.pending = nil
	s.counts.disconnects++
	s.hub.stats.Viewers.Add(-1)
	s.hub.Release(posts)
	if v.onClose != nil {
		v.onClose()
	}
}

// shutdown closes every viewer and the poller when the shard stops.
func (s *shard) shutdown() {
	for _, v := range s.viewers {
		s.doom(v)
	}
	s.reap()
	s.mu.Lock()
	adds := s.adds
	s.adds = nil
	s.mu.Unlock()
	for _, nv := range adds {
		_ = nv.Conn.Close()
		s.hub.Release(nv.Posts)
		s.hub.stats.Viewers.Add(-1)
	}
	s.counts.flushTo(&s.hub.stats)
	s.poller.close()
}

var errNotSocket = errors.New("connection has no file descriptor")

// socketFD returns the descriptor of a hijacked TCP connection. The connection keeps owning it:
// the shard writes to it directly and closes it through the connection.
func socketFD(c any) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, errNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return -1, err
	}
	return fd, nil
}
