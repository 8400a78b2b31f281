package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrReadNotReplicated is a read that fewer replicas than a batch needs (replicasToAck) confirmed
// in time: it may show changes that a failover would discard, so it is not served.
var ErrReadNotReplicated = errors.New("read not confirmed by enough replicas")

// readBarrierTimeout bounds a read's confirmation when its context has no deadline.
const readBarrierTimeout = 2 * time.Second

// ConfirmRead returns nil once the replicas a batch must reach have everything the primary held
// when ConfirmRead was called, so that a read of posts that returned before it shows nothing a
// failover could take back. Redis answers reads before its replicas have the writes they show: a
// like whose batch is unconfirmed (a 503 marked unconfirmed, its primary paused or cut off) is
// read on the primary, then lost when a replica without it is promoted, and the reader saw a
// count go back (the partition suite's histories were not linearizable for that). This is the
// read index of a consensus store, with WAIT as the quorum: a write to a barrier key sets this
// connection's replication offset to the primary's current one, and WAIT counts the replicas that
// have it. With no replicas to wait for (REDIS_ACK_REPLICAS 0) it costs nothing. On a Cluster it
// confirms each master that serves one of posts, one after the other; a read of a user's own
// likes there (their index, in the user's slot) is not confirmed (posts empty), as that index is
// kept outside the like script on a Cluster anyway (clusterindex.go).
func (s *Store) ConfirmRead(ctx context.Context, posts ...string) error {
	acks := s.replicasToAck()
	if acks == 0 {
		return nil
	}
	switch c := s.rdb.(type) {
	case *redis.Client:
		return readBarrier(ctx, c, s.keys.ReadBarrier(), acks)
	case *redis.ClusterClient:
		done := make(map[*redis.Client]bool, len(posts))
		for _, post := range posts {
			key := s.keys.PostReadBarrier(post)
			primary, err := s.primaryFor(ctx, key, "")
			if err != nil {
				return fmt.Errorf("read barrier: %w", err)
			}
			if done[primary] {
				continue
			}
			done[primary] = true
			if err := readBarrier(ctx, primary, key, acks); err != nil {
				s.lostNode(err)
				return err
			}
		}
	}
	return nil
}

// readBarrier writes key on primary and waits, in the same pipeline, until acks replicas have
// that write, giving WAIT until ctx's deadline (waitTimeout, as a batch's WAIT).
func readBarrier(ctx context.Context, primary *redis.Client, key string, acks int) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(readBarrierTimeout)
	}
	wait := waitTimeout(primary, deadline)
	var acked *redis.Cmd
	_, err := primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "1", 0)
		acked = p.Do(ctx, "WAIT", acks, wait.Milliseconds())
		return nil
	})
	if err != nil {
		return fmt.Errorf("read barrier: %w", err)
	}
	n, err := acked.Int64()
	if err != nil {
		return fmt.Errorf("read barrier: %w", err)
	}
	if n < int64(acks) {
		return fmt.Errorf("%w: %d of %d replicas within %s", ErrReadNotReplicated, n, acks, wait.Round(time.Millisecond))
	}
	return nil
}
