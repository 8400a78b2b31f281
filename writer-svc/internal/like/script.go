package like

import "github.com/redis/go-redis/v9"

// MaxBatch is the most changes one script call may carry. The script passes a batch's dedup keys
// to MGET and MSET through Lua's unpack, which Redis' Lua limits to about 8,000 values (MSET takes
// two per key); 1,000 also bounds how long one call holds the shard (well under a millisecond).
const MaxBatch = 1000

// changeScript applies an ordered batch of likes and unlikes of one post, as if each ran alone
// in that order, in one atomic call:
//
//	KEYS[1] count   KEYS[2] version   KEYS[3] channel   KEYS[3+i] dedup key of change i's user
//	ARGV[1] post id   ARGV[2] PUBLISH or SPUBLISH   ARGV[3] one byte per change: L like, U unlike
//
// It returns {count_1, changed_1, ..., count_n, changed_n}: the count right after change i and 1
// if change i liked a post not liked or unliked a post liked. A user repeated in one batch is
// counted once: the batch tracks each dedup key's state in a Lua table, seeded by one MGET.
//
// Redis work per batch, whatever its size: one MGET, one GET of the count, at most one MSET, one
// DEL, one SET of the count, and, if anything changed, one version bump and one publish of the
// final count. The channel is passed as a key, not an argument, so that Redis Cluster checks it
// hashes to the same slot as the post's keys (they share the {post} hash tag) and sharded pub/sub
// publishes it from the shard that stores the post.
//
// The version is max(previous + 1, Redis time in unix microseconds); the payload is
// {"post_id":...,"count":...,"ts":version}, byte for byte update.Update.AppendJSON. Numbers go
// through string.format('%d'): Lua's default number formatting would print a microsecond
// timestamp as 1.7e+15. A double holds integers exactly up to 2^53, so microseconds (~2^51 today)
// are exact. An unlike never takes the count below 0 (a count out of step with the dedup keys
// heals instead of going negative).
var changeScript = redis.NewScript(`
local ops = ARGV[3]
local n = #ops
local was = redis.call('MGET', unpack(KEYS, 4, n + 3))
local liked = {}
for i = 1, n do
  local k = KEYS[i + 3]
  if liked[k] == nil then liked[k] = was[i] ~= false end
end
local first = tonumber(redis.call('GET', KEYS[1])) or 0
local count = first
local out = {}
local changed = false
for i = 1, n do
  local k = KEYS[i + 3]
  local c = 0
  if string.byte(ops, i) == 76 then
    if not liked[k] then liked[k] = true; count = count + 1; c = 1 end
  elseif liked[k] then
    liked[k] = false; c = 1
    if count > 0 then count = count - 1 end
  end
  if c == 1 then changed = true end
  out[2 * i - 1] = count
  out[2 * i] = c
end
if not changed then return out end
local set, del, seen = {}, {}, {}
for i = 1, n do
  local k = KEYS[i + 3]
  if not seen[k] then
    seen[k] = true
    local now = liked[k]
    if now ~= (was[i] ~= false) then
      if now then set[#set + 1] = k; set[#set + 1] = '1' else del[#del + 1] = k end
    end
  end
end
if #set > 0 then redis.call('MSET', unpack(set)) end
if #del > 0 then redis.call('DEL', unpack(del)) end
if count ~= first then redis.call('SET', KEYS[1], string.format('%d', count)) end
local t = redis.call('TIME')
local ver = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if now > ver then ver = now end
local v = string.format('%d', ver)
redis.call('SET', KEYS[2], v)
redis.call(ARGV[2], KEYS[3], '{"post_id":"' .. ARGV[1] .. '","count":' .. string.format('%d', count) .. ',"ts":' .. v .. '}')
return out
`)
