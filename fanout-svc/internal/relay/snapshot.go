package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/epoch"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/update"
)

// Snapshot reads the current count, version and reactions of each post in one pipeline (one
// MGET and one HGETALL per post: a post's keys share a hash slot, so this works on Redis Cluster
// too), and on one Redis the epoch of the primary it read them from (package epoch: an INFO and
// a GET for the whole pipeline), so that a state read from a new primary after a failover orders
// after what the old one showed. A post never liked reads as count 0, version 0.
func (r *Relay) Snapshot(ctx context.Context, posts []string) ([]update.Update, error) {
	cmds := make([]*redis.SliceCmd, len(posts))
	rx := make([]*redis.MapStringStringCmd, len(posts))
	var ep func() (int64, error)
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		if !r.isCluster() {
			ep = epoch.Queue(ctx, p, r.keys.Epoch())
		}
		for i, post := range posts {
			cmds[i] = p.MGet(ctx, r.keys.Count(post), r.keys.Version(post))
			rx[i] = p.HGetAll(ctx, r.keys.Reactions(post))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) { // Nil: the epoch's GET of a Redis no change reached
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var e int64
	if ep != nil {
		if e, err = ep(); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	out := make([]update.Update, len(posts))
	for i, cmd := range cmds {
		vals := cmd.Val()
		count, err1 := intValue(vals, 0)
		ver, err2 := intValue(vals, 1)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", posts[i], err)
		}
		reactions, err := encodeReactions(rx[i].Val())
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", posts[i], err)
		}
		out[i] = update.Update{PostID: posts[i], Count: count, TS: ver, Epoch: e, Reactions: reactions}
	}
	return out, nil
}

// encodeReactions writes a reaction hash as the writer's script publishes it, {"clap":12,...}
// with kinds in byte order, or "" for none. Kinds are validated like post ids (they need no
// escaping); a count that is not a number is an error, never forwarded to viewers.
func encodeReactions(h map[string]string) (string, error) {
	if len(h) == 0 {
		return "", nil
	}
	kinds := slices.Sorted(maps.Keys(h))
	b := make([]byte, 0, 16*len(h))
	b = append(b, '{')
	for i, k := range kinds {
		n, err := strconv.ParseInt(h[k], 10, 64)
		if err != nil || ids.ValidPostID(k) != nil {
			return "", fmt.Errorf("reaction %q: %q is not a count", k, h[k])
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, n, 10)
	}
	return string(append(b, '}')), nil
}

func intValue(vals []any, i int) (int64, error) {
	if i >= len(vals) || vals[i] == nil {
		return 0, nil
	}
	s, ok := vals[i].(string)
	if !ok {
		return 0, fmt.Errorf("unexpected %T", vals[i])
	}
	return strconv.ParseInt(s, 10, 64)
}

// isCluster reports whether the relay reads a Redis Cluster, whose versions have no epoch.
func (r *Relay) isCluster() bool {
	_, ok := r.client.(*redis.ClusterClient)
	return ok
}
