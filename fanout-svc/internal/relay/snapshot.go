package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/update"
)

// Snapshot reads the current count and version of each post in one pipeline (one MGET per post:
// a post's keys share a hash slot, so this works on Redis Cluster too). A post never liked reads
// as count 0, version 0.
func (r *Relay) Snapshot(ctx context.Context, posts []string) ([]update.Update, error) {
	cmds := make([]*redis.SliceCmd, len(posts))
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, post := range posts {
			cmds[i] = p.MGet(ctx, r.keys.Count(post), r.keys.Version(post))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	out := make([]update.Update, len(posts))
	for i, cmd := range cmds {
		vals := cmd.Val()
		count, err1 := intValue(vals, 0)
		ver, err2 := intValue(vals, 1)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", posts[i], err)
		}
		out[i] = update.Update{PostID: posts[i], Count: count, TS: ver}
	}
	return out, nil
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
