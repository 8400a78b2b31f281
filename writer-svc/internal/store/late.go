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
// until the post's next one. The late publisher shows them: every lateEvery it reads the waiting
// posts' states again with a write (stateScript), lateChunk to a pipeline per primary, waits for
// the replicas to confirm that write, which covers every change before it, and publishes the
// states then. A primary whose replicas do not confirm a chunk is left until the next pass, so a
// pass costs at most one WAIT per primary that is behind. A post waits at most lateFor (the
// primary that held its changes is likely gone by then, and its successor publishes its own).
const (
	lateEvery = 500 * time.Millisecond
	lateFor   = time.Minute
	lateChunk = 100
	// lateMax bounds the posts waiting: beyond it, new ones are not kept (a Redis whose replicas
	// are all gone fails every batch; its posts wait for their next change).
	lateMax = 10_000
)

// late holds the posts whose state waits for confirmation. Its runner exists while posts wait;
// close stops it.
type late struct {
	mu      sync.Mutex
	pending map[string]time.Time // post -> when it first waited
	running bool
	ctx     context.Context // the runner's: cancelled by close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newLate() *late {
	ctx, cancel := context.WithCancel(context.Background())
	return &late{pending: map[string]time.Time{}, ctx: ctx, cancel: cancel}
}

// add queues post (none for an empty id), and starts the runner if it is not running.
func (l *late) add(s *Store, post string) {
	if post == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return
	}
	if _, ok := l.pending[post]; !ok && len(l.pending) < lateMax {
		l.pending[post] = time.Now()
	}
	if !l.running && len(l.pending) > 0 {
		l.running = true
		l.wg.Add(1)
		go func() { // exits when no post waits, or when close cancels l.ctx
			defer l.wg.Done()
			l.run(s)
		}()
	}
}

// run publishes the waiting posts' states as their replicas confirm them, until none waits.
func (l *late) run(s *Store) {
	t := time.NewTicker(lateEvery)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range s.publishStates(l.ctx, l.due()) {
			l.mu.Lock()
			delete(l.pending, p)
			l.mu.Unlock()
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

// due drops the posts that waited lateFor and returns the others.
func (l *late) due() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	posts := make([]string, 0, len(l.pending))
	for p, since := range l.pending {
		if time.Since(since) > lateFor {
			delete(l.pending, p)
			continue
		}
		posts = append(posts, p)
	}
	return posts
}

// close stops the runner and keeps new posts out.
func (l *late) close() {
	l.mu.Lock()
	l.cancel()
	l.mu.Unlock()
	l.wg.Wait()
}

// errLateUnconfirmed is a chunk of states its replicas have not confirmed yet.
var errLateUnconfirmed = errors.New("posts' states not confirmed by enough replicas yet")

// publishStates shows the states of posts whose replicas confirm them, and returns those posts
// (and the ones with nothing to show). Posts go to their primaries in chunks of lateChunk; after
// a chunk that fails, the rest of its primary's wait for the next pass.
func (s *Store) publishStates(ctx context.Context, posts []string) []string {
	byPrimary := map[*redis.Client][]string{}
	for _, p := range posts {
		primary, err := s.primaryFor(ctx, s.keys.Count(p), "")
		if err == nil {
			byPrimary[primary] = append(byPrimary[primary], p)
		}
	}
	var done []string
	for primary, ps := range byPrimary {
		for len(ps) > 0 {
			chunk := ps[:min(len(ps), lateChunk)]
			ps = ps[len(chunk):]
			if s.publishChunk(ctx, primary, chunk) != nil {
				break
			}
			done = append(done, chunk...)
		}
	}
	return done
}

// publishChunk reads the states of posts, all on primary, with a write each, waits up to
// lateEvery for the replicas to confirm them, and publishes them. nil: published, or nothing to
// publish.
func (s *Store) publishChunk(ctx context.Context, primary *redis.Client, posts []string) error {
	acks := s.replicasToAck()
	mode := ""
	if !s.cluster {
		mode = "E"
	}
	states := make([]*redis.Cmd, len(posts))
	var acked *redis.Cmd
	_, _ = primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, post := range posts {
			keys := []string{s.keys.Count(post), s.keys.Version(post), s.keys.Reactions(post)}
			if !s.cluster {
				keys = append(keys, s.keys.Epoch())
			}
			states[i] = stateScript.Eval(ctx, p, keys, post, mode) // no EVALSHA: a pipeline cannot fall back; this path is rare
		}
		if acks > 0 {
			acked = p.Do(ctx, "WAIT", acks, lateEvery.Milliseconds())
		}
		return nil
	})
	if acked != nil {
		if n, err := acked.Int64(); err != nil || n < int64(acks) {
			return errLateUnconfirmed
		}
	}
	payloads := make([]string, len(posts))
	for i, st := range states {
		payload, err := st.Text()
		if err != nil {
			return err
		}
		payloads[i] = payload
	}
	_, err := primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, payload := range payloads {
			if payload != "" {
				p.Do(ctx, s.publish, s.keys.Channel(posts[i]), payload)
			}
		}
		return nil
	})
	return err
}
