package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is a batch that Redis applied on the primary but that fewer than AckReplicas
// replicas confirmed before its deadline. Its changes stay on the primary (a read shows them, and
// replicas get them as they catch up); their callers are answered 503, which is safe to retry:
// the dedup key makes a retried like count once.
var ErrNotReplicated = errors.New("like not confirmed by enough replicas")

// waitLate is how late Redis may answer a WAIT that times out: it checks blocked clients'
// timeouts on its clock ticks, every 1000/hz ms (100 ms at the default hz 10). WAIT's timeout
// leaves that much before the deadline, so that a batch its replicas did not confirm is answered
// "not replicated" rather than running into the deadline, which would leave it unsettled (see
// Settled).
const waitLate = 100 * time.Millisecond

// replicasToAck is how many replicas must confirm the next batch: Options.Acks's answer when
// set, else AckReplicas.
func (s *Store) replicasToAck() int {
	if s.ackFn != nil {
		return s.ackFn()
	}
	return s.acks
}

// runAcked runs the script and then WAIT acks on the same connection, in one round trip
// (a pipeline), and once the replicas confirmed it, publishes the post's state the script
// returned (mode D: the script publishes nothing itself), so that viewers are shown only states
// the replicas have: one round trip more per batch. A batch they did not confirm goes to the late
// publisher (late.go). WAIT counts the replicas that have this connection's last write, so it must
// follow the script on its connection; on a Cluster the pipeline therefore goes to a node client
// (primary: see primaryFor), because the cluster client would send a keyless WAIT to any node. A
// node client follows no redirection, so run (run.go) follows MOVED and ASK itself and passes
// the node they name, with asking for an ASK (ASKING goes first): WAIT then goes to the master
// that ran the script. A refused script's WAIT costs nothing more when replicas keep up: it asks
// for the connection's earlier writes, which they have. WAIT gives up waitLate before the
// script's cutoff (the batch's deadline less ClockSkew), and as early before the client's read
// timeout, which bounds the whole pipeline's reply.
func (s *Store) runAcked(ctx context.Context, primary *redis.Client, asking bool, keys []string, args []any, cutoff time.Time, acks int) ([]any, error) {
	wait := waitTimeout(primary, cutoff)
	eval, acked := evalAndWait(ctx, primary, changeScript.EvalSha, keys, args, acks, wait, asking)
	if redis.HasErrorPrefix(eval.Err(), "NOSCRIPT") || errors.Is(eval.Err(), redis.ErrNoScript) {
		eval, acked = evalAndWait(ctx, primary, changeScript.Eval, keys, args, acks, wait, asking)
	}
	reply, err := eval.Slice()
	if err != nil {
		s.lostNode(err)
		return nil, err
	}
	post, _ := args[0].(string)
	n, err := acked.Int64()
	if err != nil {
		s.late.add(s, post) // its state, if it changed, is shown once replicas have it
		return nil, fmt.Errorf("%w: wait: %w", ErrNotReplicated, err)
	}
	if n < int64(acks) {
		s.late.add(s, post)
		return nil, fmt.Errorf("%w: %d of %d replicas within %s", ErrNotReplicated, n, acks, wait.Round(time.Millisecond))
	}
	if len(reply) == 7 {
		if state, _ := reply[6].(string); state != "" {
			// Confirmed: now its viewers may see it. A publish that fails leaves the post to the
			// late publisher, which shows its state once it can.
			if err := primary.Do(ctx, s.publish, keys[2], state).Err(); err != nil {
				s.late.add(s, post)
			}
		}
	}
	return reply, nil
}

// waitTimeout is the timeout of a WAIT sent to primary that must answer by until: waitLate before
// it, and as early before the client's read timeout, which bounds the pipeline's reply.
func waitTimeout(primary *redis.Client, until time.Time) time.Duration {
	wait := time.Until(until) - waitLate
	if rt := primary.Options().ReadTimeout; rt > 0 {
		wait = min(wait, rt-waitLate)
	}
	return max(wait, time.Millisecond) // WAIT with timeout 0 would block for ever
}

// evalAndWait sends the script (by run: EvalSha or Eval) and WAIT in one pipeline, after ASKING
// when asking: ASKING lets an importing node serve the one command that follows it.
func evalAndWait(ctx context.Context, c *redis.Client, run func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
	keys []string, args []any, replicas int, wait time.Duration, asking bool) (eval, acked *redis.Cmd) {
	// Each command's error is read from it; the pipeline's own is the first of those.
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if asking {
			p.Do(ctx, "ASKING")
		}
		eval = run(ctx, p, keys, args...)
		acked = p.Do(ctx, "WAIT", replicas, wait.Milliseconds())
		return nil
	})
	return eval, acked
}

// primaryFor returns the client of the primary that stores key: the client itself, or on a
// Cluster the node client of the key's master, or of the master at addr when a redirection named
// one (see masterAt; a node that owns no slot yet falls back to the key's master).
func (s *Store) primaryFor(ctx context.Context, key, addr string) (*redis.Client, error) {
	switch c := s.rdb.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		if addr != "" {
			if m := masterAt(ctx, c, addr); m != nil {
				return m, nil
			}
		}
		primary, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("master of %s: %w", key, err)
		}
		return primary, nil
	default:
		return nil, fmt.Errorf("replica acknowledgements need a client or a cluster client, not %T", s.rdb)
	}
}

// masterAt reloads the cluster client's slot map (ForEachMaster reads CLUSTER SLOTS before it
// iterates, which is also what makes the next MasterForKey name the new owner after a MOVED) and
// returns its node client of the master at addr, or nil when addr owns no slot yet (an ASK to a
// node that is importing its first slot): the caller then goes to the slot's master and backs
// off until the move ends. The node clients are go-redis's own, pooled, never closed here.
func masterAt(ctx context.Context, c *redis.ClusterClient, addr string) *redis.Client {
	var mu sync.Mutex
	var found *redis.Client
	_ = c.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		if m.Options().Addr == addr {
			mu.Lock()
			found = m
			mu.Unlock()
		}
		return nil
	})
	return found
}

// lostNode asks the cluster client to reload its slot map after a call to a node client failed
// without a Redis reply (the node is down or unreachable). go-redis reloads it on its own only
// when its own commands meet redirections or every reloadInterval (10 s), and the node clients
// used here bypass its redirection handling: without this, after a master fails over every
// acknowledged batch would go to the dead master until the periodic reload.
func (s *Store) lostNode(err error) {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	var reply redis.Error
	if !errors.As(err, &reply) || redis.IsClusterDownError(err) || redis.IsReadOnlyError(err) {
		c.ReloadState(context.Background())
	}
}
