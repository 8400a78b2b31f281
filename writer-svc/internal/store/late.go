package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Late publishing: with replica acknowledgements a batch's state is published only after its WAIT
// confirms it (runAcked). A batch its replicas did not confirm in time was answered 503, but its
// changes stay on the primary and reach the replicas as they catch up; a retried like then
// changes nothing and publishes nothing. Without more, its viewers would never see those changes
// until the post's next one. The late publisher shows them: it reads the post's state again with
// a write (stateScript), waits for the replicas to confirm that write, which covers every change
// before it, and publishes the state then. It tries every lateEvery for lateFor, then gives up
// (the primary that held the changes is likely gone, and its successor publishes its own).
const (
	lateEvery = 500 * time.Millisecond
	lateFor   = time.Minute
	// lateMax bounds the posts waiting: beyond it, new ones are not kept (a Redis whose replicas
	// are all gone fails every batch; its posts wait for their next change).
	lateMax = 10_000
)

// late holds the posts whose state waits for confirmation. Its runner exists while posts wait.
type late struct {
	mu      sync.Mutex
	pending map[string]time.Time // post -> when it first waited
	running bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newLate() *late { return &late{pending: map[string]time.Time{}, stop: make(chan struct{})} }

// add queues post (none for an empty id), and starts the runner if it is not running.
func (l *late) add(s *Store, post string) {
	if post == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if _, ok := l.pending[post]; !ok && len(l.pending) < lateMax {
		l.pending[post] = time.Now()
	}
	if !l.running && len(l.pending) > 0 {
		l.running = true
		l.wg.Add(1)
		go func() { // exits when no post waits, or when close stops it
			defer l.wg.Done()
			l.run(s)
		}()
	}
}

// run publishes the waiting posts' states as their replicas confirm them, until none waits.
func (l *late) run(s *Store) {
	t := time.NewTicker(lateEvery)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with run: cancel or stop
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		posts := make([]string, 0, len(l.pending))
		for p, since := range l.pending {
			if time.Since(since) > lateFor {
				delete(l.pending, p)
				continue
			}
			posts = append(posts, p)
		}
		l.mu.Unlock()
		for _, p := range posts {
			if s.publishState(ctx, p) == nil {
				l.mu.Lock()
				delete(l.pending, p)
				l.mu.Unlock()
			}
		}
		l.mu.Lock()
		if len(l.pending) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// close stops the runner and keeps new posts out.
func (l *late) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// errLateUnconfirmed is a late publish whose replicas have not confirmed the state yet.
var errLateUnconfirmed = errors.New("post's state not confirmed by enough replicas yet")

// publishState reads post's state with a write, waits up to lateEvery for the replicas to confirm
// it, and publishes it. nil: published, or nothing to publish.
func (s *Store) publishState(ctx context.Context, post string) error {
	acks := s.replicasToAck()
	primary, err := s.primaryFor(ctx, s.keys.Count(post), "")
	if err != nil {
		return err
	}
	keys := []string{s.keys.Count(post), s.keys.Version(post), s.keys.Reactions(post), s.keys.Epoch()}
	mode := ""
	if !s.cluster {
		mode = "E"
	} else {
		keys = keys[:3]
	}
	var state, acked *redis.Cmd
	_, _ = primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		state = stateScript.Eval(ctx, p, keys, post, mode) // a pipeline cannot fall back from EVALSHA; this path is rare
		if acks > 0 {
			acked = p.Do(ctx, "WAIT", acks, lateEvery.Milliseconds())
		}
		return nil
	})
	payload, err := state.Text()
	if err != nil {
		return err
	}
	if acked != nil {
		if n, err := acked.Int64(); err != nil || n < int64(acks) {
			return errLateUnconfirmed
		}
	}
	if payload == "" {
		return nil
	}
	return primary.Do(ctx, s.publish, s.keys.Channel(post), payload).Err()
}
