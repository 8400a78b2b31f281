package userlikes

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/epoch"
	"github.com/likes/likes/pkg/rediskeys"
)

// PostState is what a read reports of one post.
type PostState struct {
	PostID  string
	Count   int64 // 0 for a post never liked
	Version int64 // the post's version (the ts of its updates); 0 for a post never liked
	// Epoch is the epoch of the primary the read saw (package epoch; 0 on a Cluster), as the
	// post's updates carry it: with Version, it orders the read among them across failovers.
	Epoch int64
	Liked bool // whether the reading user likes it; false when no user was given
	// Reactions is the post's count of each reaction kind it has had, empty (not nil) for none.
	Reactions map[string]int64
}

// Reader reads many posts at once: their counts and versions, and whether one user liked them.
// It is separate from store.Store because it only reads and runs no script.
type Reader struct {
	rdb      redis.UniversalClient
	keys     rediskeys.Scheme
	maxPosts int
}

// NewReader returns a Reader that serves at most maxPosts posts per read.
func NewReader(rdb redis.UniversalClient, keys rediskeys.Scheme, maxPosts int) *Reader {
	return &Reader{rdb: rdb, keys: keys, maxPosts: maxPosts}
}

// MaxPosts is the most posts one read may ask for.
func (rd *Reader) MaxPosts() int { return rd.maxPosts }

// Read returns the state of each post, in order, with Liked filled for user (none when user is
// empty). It sends one MGET and one HGETALL (the reactions) per post, all in one pipeline: a post's keys share its hash slot, so
// each MGET is single-slot, and on a Cluster go-redis groups the pipeline by the node that owns
// each slot. The whole read is one round trip per node, however many posts it names. On one
// Redis the pipeline also reads the epoch (an INFO and a GET: package epoch).
func (rd *Reader) Read(ctx context.Context, posts []string, user string) ([]PostState, error) {
	cmds := make([]*redis.SliceCmd, len(posts))
	rx := make([]*redis.MapStringStringCmd, len(posts))
	var ep func() (int64, error)
	_, err := rd.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if _, cluster := rd.rdb.(*redis.ClusterClient); !cluster {
			ep = epoch.Queue(ctx, p, rd.keys.Epoch())
		}
		for i, post := range posts {
			keys := []string{rd.keys.Count(post), rd.keys.Version(post)}
			if user != "" {
				keys = append(keys, rd.keys.User(post, user))
			}
			cmds[i] = p.MGet(ctx, keys...)
			rx[i] = p.HGetAll(ctx, rd.keys.Reactions(post))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) { // Nil: the epoch's GET of a Redis no change reached
		return nil, fmt.Errorf("read posts: %w", err)
	}
	var e int64
	if ep != nil {
		if e, err = ep(); err != nil {
			return nil, fmt.Errorf("read posts: %w", err)
		}
	}
	out := make([]PostState, len(posts))
	for i, cmd := range cmds {
		st, err := decodeState(posts[i], cmd.Val(), user != "")
		if err != nil {
			return nil, err
		}
		st.Epoch = e
		if st.Reactions, err = decodeReactions(posts[i], rx[i].Val()); err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// decodeState turns one MGET reply (count, version and, with a user, the dedup key) into a
// PostState. A missing key is a post never liked, or not liked by the user.
func decodeState(post string, vals []any, withUser bool) (PostState, error) {
	want := 2
	if withUser {
		want = 3
	}
	if len(vals) != want {
		return PostState{}, fmt.Errorf("read %s: got %d values; want %d", post, len(vals), want)
	}
	count, err := intOrZero(vals[0])
	if err != nil {
		return PostState{}, fmt.Errorf("read %s count: %w", post, err)
	}
	ver, err := intOrZero(vals[1])
	if err != nil {
		return PostState{}, fmt.Errorf("read %s version: %w", post, err)
	}
	return PostState{PostID: post, Count: count, Version: ver, Liked: withUser && vals[2] != nil}, nil
}

// decodeReactions turns a post's reaction hash (kind to count) into counts.
func decodeReactions(post string, h map[string]string) (map[string]int64, error) {
	out := make(map[string]int64, len(h))
	for kind, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read %s reactions %s: %w", post, kind, err)
		}
		out[kind] = n
	}
	return out, nil
}

func intOrZero(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("unexpected %T", v)
	}
	return strconv.ParseInt(s, 10, 64)
}
