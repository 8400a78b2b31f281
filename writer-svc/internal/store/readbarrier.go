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

// readBarrierTimeout bounds a read's confirmation when its context has no deadline (tests, tools).
const readBarrierTimeout = 2 * time.Second

// ConfirmRead returns nil once the replicas a batch must reach have everything the primary held
// when ConfirmRead was called, so that a read of posts that returned before it shows nothing a
// failover could take back. Redis answers reads before its replicas have the writes they show: a
// like whose batch is unconfirmed (a 503 marked unconfirmed, its primary paused or cut off) is
// read on the primary, then lost when a replica without it is promoted, and the reader saw a
// count go back (the partition suite's histories were not linearizable for that). This is the
// read index of a consensus store, with WAIT as the quorum: a write to a barrier key sets this
// connection's replication offset to the primary's current one, and WAIT counts the replicas that
// have it. The reads of an interval share their barrier (barriers: one that starts after each of
// them was called), so reads cost the primary a bounded number of writes however many come. With
// no replicas to wait for (REDIS_ACK_REPLICAS 0) it costs nothing. On a Cluster it confirms each
// master that serves one of posts, all at once; a read of a user's own likes there (their index,
// in the user's slot) is not confirmed (posts empty), as that index is kept outside the like
// script on a Cluster anyway (clusterindex.go).
func (s *Store) ConfirmRead(ctx context.Context, posts ...string) error {
	acks := s.replicasToAck()
	if acks == 0 {
		return nil
	}
	var err error
	switch c := s.rdb.(type) {
	case *redis.Client:
		err = s.barriers.confirm(ctx, "", acks, func(ctx context.Context, until time.Time, acks int) error {
			return readBarrier(ctx, c, s.keys.ReadBarrier(), until, acks)
		})
	case *redis.ClusterClient:
		err = s.confirmMasters(ctx, acks, posts)
	}
	if err != nil {
		return fmt.Errorf("read barrier: %w", err)
	}
	return nil
}

// confirmMasters confirms the read of posts on every master that serves one of them, in
// parallel: each master's barrier is its own (one lane per master address), and the read waits
// for them all.
func (s *Store) confirmMasters(ctx context.Context, acks int, posts []string) error {
	keyOf := make(map[*redis.Client]string, len(posts)) // a barrier key in a slot the master serves
	for _, post := range posts {
		key := s.keys.PostReadBarrier(post)
		primary, err := s.primaryFor(ctx, key, "")
		if err != nil {
			return err
		}
		if _, ok := keyOf[primary]; !ok {
			keyOf[primary] = key
		}
	}
	errs := make(chan error, len(keyOf))
	for primary, key := range keyOf {
		go func() { // exits when confirm returns, at ctx's end at the latest
			errs <- s.barriers.confirm(ctx, primary.Options().Addr, acks, func(ctx context.Context, until time.Time, acks int) error {
				err := readBarrier(ctx, primary, key, until, acks)
				if err != nil {
					s.lostNode(err)
				}
				return err
			})
		}()
	}
	var first error
	for range keyOf {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close stops the read barriers: those in flight and queued fail, and their runners have exited
// when it returns. The store must not be used after.
func (s *Store) Close() {
	s.barriers.close()
	s.late.close()
}

// readBarrier writes key on primary and waits, in the same pipeline, until acks replicas have
// that write, giving WAIT until until (waitTimeout, as a batch's WAIT).
func readBarrier(ctx context.Context, primary *redis.Client, key string, until time.Time, acks int) error {
	wait := waitTimeout(primary, until)
	var acked *redis.Cmd
	_, err := primary.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "1", 0)
		acked = p.Do(ctx, "WAIT", acks, wait.Milliseconds())
		return nil
	})
	if err != nil {
		return err
	}
	n, err := acked.Int64()
	if err != nil {
		return err
	}
	if n < int64(acks) {
		return fmt.Errorf("%w: %d of %d replicas within %s", ErrReadNotReplicated, n, acks, wait.Round(time.Millisecond))
	}
	return nil
}
