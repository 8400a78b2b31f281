package slotmove

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options tune a move.
type Options struct {
	// Batch is the most keys one MIGRATE carries (and one CLUSTER GETKEYSINSLOT lists); 0 means
	// DefaultBatch. A batch is serialized whole in the source's memory and blocks both nodes
	// while it transfers, so it trades round trips against how long each call stalls them.
	Batch int
	// Timeout is MIGRATE's own timeout for one batch (the longest the source waits on the
	// target); 0 means DefaultTimeout.
	Timeout time.Duration
}

// Defaults: 10,000 small keys (a dedup key and its value are a few dozen bytes) make a MIGRATE of
// a few hundred kilobytes, a few milliseconds on one site's network.
const (
	DefaultBatch   = 10000
	DefaultTimeout = 10 * time.Second
)

// Result says what a move did.
type Result struct {
	Slot     int
	From, To string // master addresses; equal when the slot was already on To
	Keys     int    // keys moved
	Migrates int    // MIGRATE calls
	// Moving is how long the slot was migrating: from SETSLOT MIGRATING on the source to SETSLOT
	// NODE on the target, while multi-key calls that miss a key of the slot get TRYAGAIN.
	Moving time.Duration
}

// Move moves slot with all its keys to the master at to, asking seed (any node) for the
// cluster's layout. Steps, as the CLUSTER SETSLOT documentation orders them: IMPORTING on the
// target, MIGRATING on the source, MIGRATE the keys Options.Batch at a time until none is left,
// then SETSLOT NODE on the target (which serves the slot from then on), on the source (which
// answers MOVED from then on), and on every other master (which gossip would tell anyway, later).
//
// A move that fails midway leaves the slot migrating, its keys split between the two nodes but
// each key whole on one of them; run Move again with the same target to finish it (each step is
// idempotent), or `redis-cli --cluster fix` to settle it.
func Move(ctx context.Context, seed string, slot int, to string, o Options) (Result, error) {
	if slot < 0 || slot > 16383 {
		return Result{}, fmt.Errorf("slot %d: want 0 to 16383", slot)
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	nodes, err := clusterNodes(ctx, seed)
	if err != nil {
		return Result{}, err
	}
	src, dst, err := endpoints(nodes, slot, to)
	if err != nil {
		return Result{}, err
	}
	res := Result{Slot: slot, From: src.addr, To: dst.addr}
	if src.id == dst.id {
		return res, nil
	}
	host, port, err := net.SplitHostPort(dst.addr)
	if err != nil {
		return res, fmt.Errorf("target address %q: %w", dst.addr, err)
	}
	s, d := dial(src.addr, o.Timeout), dial(dst.addr, o.Timeout)
	defer s.Close()
	defer d.Close()

	if err := d.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.id).Err(); err != nil {
		return res, fmt.Errorf("set slot %d importing on %s: %w", slot, dst.addr, err)
	}
	began := time.Now()
	if err := s.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id).Err(); err != nil {
		return res, fmt.Errorf("set slot %d migrating on %s: %w", slot, src.addr, err)
	}
	for {
		keys, err := s.ClusterGetKeysInSlot(ctx, slot, o.Batch).Result()
		if err != nil {
			return res, fmt.Errorf("keys of slot %d on %s: %w", slot, src.addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := make([]any, 0, 7+len(keys))
		args = append(args, "MIGRATE", host, port, "", 0, o.Timeout.Milliseconds(), "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		res.Migrates++
		// NOKEY: every listed key expired meanwhile (a batch key's short TTL); nothing to move.
		if err := s.Do(ctx, args...).Err(); err != nil && !redis.HasErrorPrefix(err, "NOKEY") {
			return res, fmt.Errorf("migrate %d keys of slot %d to %s: %w", len(keys), slot, dst.addr, err)
		}
		res.Keys += len(keys)
	}
	if err := d.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst.id).Err(); err != nil {
		return res, fmt.Errorf("set slot %d node on %s: %w", slot, dst.addr, err)
	}
	res.Moving = time.Since(began)
	if err := s.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst.id).Err(); err != nil {
		return res, fmt.Errorf("set slot %d node on %s: %w", slot, src.addr, err)
	}
	var errs []error
	for _, n := range nodes {
		if !n.master || n.failed || n.id == src.id || n.id == dst.id {
			continue
		}
		c := dial(n.addr, o.Timeout)
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dst.id).Err(); err != nil {
			errs = append(errs, fmt.Errorf("set slot %d node on %s (gossip will tell it): %w", slot, n.addr, err))
		}
		_ = c.Close()
	}
	return res, errors.Join(errs...)
}

// endpoints finds the master that owns slot, or failing that the source of a move of it left
// half done, and the master at to.
func endpoints(nodes []node, slot int, to string) (src, dst node, err error) {
	var haveSrc, haveDst bool
	for _, n := range nodes {
		if n.master && !n.failed && n.owns(slot) {
			src, haveSrc = n, true
		}
		if n.addr == to {
			dst, haveDst = n, true
		}
	}
	switch {
	case !haveDst:
		return src, dst, fmt.Errorf("target %s is not a node of this cluster", to)
	case !dst.master:
		return src, dst, fmt.Errorf("target %s is a replica; move slots to masters", to)
	case !haveSrc:
		return src, dst, fmt.Errorf("no live master owns slot %d", slot)
	}
	return src, dst, nil
}

// clusterNodes reads CLUSTER NODES from seed.
func clusterNodes(ctx context.Context, seed string) ([]node, error) {
	c := dial(seed, DefaultTimeout)
	defer c.Close()
	text, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster nodes from %s: %w", seed, err)
	}
	return parseNodes(text)
}

// dial returns a client of one node, with a single connection: the mover sends its commands one
// after another, and SETSLOT must reach each node in order. Its read timeout outlasts MIGRATE's
// own (migrate), so that a slow batch fails with MIGRATE's error, which says which step failed,
// rather than a client timeout; no command is retried behind the operator's back.
func dial(addr string, migrate time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1, ReadTimeout: migrate + 5*time.Second})
}
