package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// On a Cluster a user's index of likes (rediskeys.UserLikes) lives in another slot than the
// posts it names, so the like script cannot keep it, and no single call can keep both exact.
// The store keeps one invariant instead: every post a user likes is in the user's index. An index
// may also name posts the user does not like (stale entries); every reader checks each entry
// against the post's dedup key, so that no one ever sees one, and removes the old ones.
//
//   - A like's entry is written (ZADD, the writer's clock as score) before its batch's script is
//     sent. If that fails the batch is not sent and its likes are answered 503: nothing is stored.
//     If the script then fails or does not change anything, the entry is stale.
//   - An unlike's entry is removed after its batch, best effort, and only if it is older than the
//     store's grace: a like by the same user of the same post on another writer may have written
//     its entry and still be on its way to Redis, and removing that entry would lose the like
//     from the index. A like lands before its request's deadline or never (changeScript), so an
//     entry older than the longest request cannot belong to a like still on its way.
//   - Readers (package userlikes) remove stale entries under the same age rule (RemoveStale), and
//     a user's deletion of their likes waits out the grace before its last pass.
//
// On one Redis (or Sentinel) the script keeps the index in the same call and none of this runs.

// errIndex is a batch whose index entries could not be written on a Cluster: its script was not
// sent, so nothing of it was stored.
var errIndex = errors.New("like index")

// unindexScript removes post (ARGV[1]) from the index KEYS[1] if its entry is not younger than
// ARGV[2] (unix microseconds), in one call: a like that wrote the entry anew meanwhile keeps it.
var unindexScript = redis.NewScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
`)

// RemoveStale queues on p the removal of post from the user's index of likes at key, if its entry
// was written at or before before (unix microseconds): the rule every reader of an index follows
// for an entry whose like is gone. Its reply is 1 when it removed the entry, else 0.
func RemoveStale(ctx context.Context, p redis.Scripter, key, post string, before int64) *redis.Cmd {
	return unindexScript.Eval(ctx, p, []string{key}, post, before)
}

// indexLikes writes the index entry of each like of post in changes, before its batch is sent.
func (s *Store) indexLikes(ctx context.Context, post string, changes []Change) error {
	now := float64(time.Now().UnixMicro())
	cmds := make([]*redis.IntCmd, 0, len(changes))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range changes {
			if !c.Unlike {
				cmds = append(cmds, p.ZAdd(ctx, s.keys.UserLikes(c.User), redis.Z{Score: now, Member: post}))
			}
		}
		return nil
	})
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("%w: %w", errIndex, err)
		}
	}
	return nil
}

// unindex removes, best effort, the index entries of the unlikes in changes that took effect,
// when older than the grace. An entry left behind is stale, which readers handle.
func (s *Store) unindex(ctx context.Context, post string, changes []Change, res []Result) {
	before := time.Now().Add(-s.grace).UnixMicro()
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range changes {
			if c.Unlike && res[i].Changed {
				RemoveStale(ctx, p, s.keys.UserLikes(c.User), post, before)
			}
		}
		return nil
	})
}
