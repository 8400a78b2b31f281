package worker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/likes/likes/loadgen/internal/stream"
	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
)

// Viewer states.
const (
	statePending int32 = iota
	stateOpen
	stateFailed
	stateRefused
	stateDropped
)

// viewer is one SSE connection. Its goroutine (run) owns conn, stream and buf; other goroutines
// touch only the atomics and, to end it, close conn through closeOnce.
type viewer struct {
	w      *Worker
	post   int
	shard  int
	target target
	dialer *net.Dialer

	state   atomic.Int32
	last    atomic.Int64 // newest count received; -1 before any
	inPhase atomic.Bool  // open when the current phase began: its deliveries are measured

	mu   sync.Mutex // guards conn against close racing with dial
	conn net.Conn
	gone bool

	stream stream.Stream
	nowUS  int64
	emitFn func(*sse.Event) // v.emit, bound once so Feed does not allocate a closure per read
}

// run dials, reads until the connection ends and records its fate. It exits when the
// connection fails, the server closes it, or the worker closes it (close).
func (v *viewer) run(ctx context.Context, handshakeDone func()) {
	handshaking := true
	finishHandshake := func() {
		if handshaking {
			handshaking = false
			handshakeDone()
		}
	}
	defer finishHandshake()
	conn, err := dial(ctx, v.dialer, v.target)
	if err != nil {
		v.fail(stateFailed, reason(err))
		return
	}
	if !v.setConn(conn) {
		conn.Close()
		v.fail(stateFailed, "closed while connecting")
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(v.dialer.Timeout))
	buf := make([]byte, v.w.readBuffer)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			v.nowUS = time.Now().UnixMicro()
			ferr := v.stream.Feed(buf[:n], v.emitFn)
			if handshaking && v.stream.Open() {
				finishHandshake()
				_ = conn.SetReadDeadline(time.Time{})
				v.w.opened(v)
			}
			if ferr != nil {
				v.end(ferr)
				return
			}
		}
		if err != nil {
			v.end(err)
			return
		}
	}
}

// end records why a connection ended and closes it.
func (v *viewer) end(err error) {
	v.close()
	var se *stream.StatusError
	switch {
	case v.state.Load() == stateOpen:
		if !v.w.closing.Load() {
			v.w.dropped(v, reason(err))
		}
	case errors.As(err, &se) && se.Code == 503:
		v.fail(stateRefused, "")
	case errors.As(err, &se):
		v.fail(stateFailed, "status "+strconv.Itoa(se.Code))
	default:
		v.fail(stateFailed, reason(err))
	}
}

func (v *viewer) fail(state int32, why string) {
	if v.state.CompareAndSwap(statePending, state) {
		v.w.failed(state, why)
	}
}

func (v *viewer) setConn(c net.Conn) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.gone {
		return false
	}
	v.conn = c
	return true
}

// close closes the connection (now or, if it is still being dialled, as soon as it exists).
func (v *viewer) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gone = true
	if v.conn != nil {
		v.conn.Close()
	}
}

// abandonIfPending ends a handshake that has not completed.
func (v *viewer) abandonIfPending() {
	if v.state.Load() == statePending {
		v.close()
	}
}

// emit handles one event; it runs on the viewer's goroutine and allocates nothing.
func (v *viewer) emit(e *sse.Event) {
	if string(e.Event) != sse.EventCount {
		return
	}
	count, ts, err := update.ParseCount(e.Data)
	if err != nil {
		v.w.malformed.Add(1)
		return
	}
	v.last.Store(count)
	v.w.events.Add(1)
	if ph := v.w.phase.Load(); ph != nil && v.inPhase.Load() {
		ph.record(v.post, v.shard, count, ts, v.nowUS)
	}
}
