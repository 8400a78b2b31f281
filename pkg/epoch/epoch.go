// Package epoch numbers the terms of a Redis primary, so that the states of a post read or
// published after a failover order after every state the old primary showed, even the ones the
// failover discarded. An asynchronous replica may lack the old primary's last changes when it is
// promoted (Redis' replication docs say so of every failover); without epochs its versions of a
// post start again below the discarded ones, and every viewer that was shown one drops the new
// primary's states as older until the post's version passes it.
//
// A primary's term is known by its replication id, which Redis gives a replica anew when it is
// promoted (and keeps on its replicas, so that they report the same). The key rediskeys.Epoch
// holds "<replication id> <epoch>" of the primary that last stored a change. Its epoch is the
// current one while that primary is the current one; a different replication id means one
// promotion (at least) since, and the epoch is one more. The writer's script applies this rule and
// stores the new pair with its change (Lua); readers apply it to what they read (Of), without
// writing: a read on a new primary that no change has reached yet already names the epoch the
// next change will store.
//
// Two promotions in a row with no change stored in between count as one: both give the same
// epoch, and a change the first new primary made and the second lacks is ordered by its
// version alone (Redis' clock: a change after the second failover is later than it unless the
// two primaries' clocks differ by more than the failover took). A Redis that restarts with a new
// replication id raises the epoch with no failover, and so does a primary's first replica when the
// primary has no replication backlog yet (Redis then starts a new history: a new id); either costs
// viewers nothing: every state compares newer once, and the same. The epoch saturates at
// update.MaxEpoch (2,047 such raises), where versions order by ts alone again.
package epoch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Lua defines currentEpoch(key) for a script that stores a change: the epoch of the primary it
// runs on, by the rule above, after storing it in key when it changed. It costs one INFO
// replication (about 2.4 µs of Redis CPU) and one GET, and one SET per term.
const Lua = `
local function currentEpoch(key)
  local id = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or ''
  local stored = redis.call('GET', key)
  local e = 0
  if stored then
    local sid, se = string.match(stored, '^(%x+) (%d+)$')
    e = tonumber(se) or 0
    if sid == id then return e end
    e = e + 1
  end
  redis.call('SET', key, id .. ' ' .. string.format('%d', e))
  return e
end
`

// Of is the epoch of the primary whose replication id is replid, when the key holds stored (""
// when it is absent): Lua's rule, without the write.
func Of(replid, stored string) int64 {
	if stored == "" {
		return 0
	}
	sid, se, ok := strings.Cut(stored, " ")
	e, err := strconv.ParseInt(se, 10, 64)
	if !ok || err != nil || e < 0 {
		e = 0
	}
	if sid == replid {
		return e
	}
	return e + 1
}

// ReplID reads master_replid from the text of INFO replication ("" when it has none).
func ReplID(info string) string {
	_, rest, ok := strings.Cut(info, "master_replid:")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "\r\n")
	id, _, _ = strings.Cut(id, "\n")
	return strings.TrimSpace(id)
}

// Queue adds to p the two commands that tell the current epoch, INFO replication and a GET of key,
// and returns a function that reads it once p has run. In the same pipeline as a read of posts
// they go to the same node, so the epoch is the one of the primary whose state the read saw.
func Queue(ctx context.Context, p redis.Pipeliner, key string) func() (int64, error) {
	info := p.Info(ctx, "replication")
	stored := p.Get(ctx, key)
	return func() (int64, error) {
		text, err := info.Result()
		if err != nil {
			return 0, fmt.Errorf("epoch: info: %w", err)
		}
		v, err := stored.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("epoch: %w", err)
		}
		return Of(ReplID(text), v), nil
	}
}
