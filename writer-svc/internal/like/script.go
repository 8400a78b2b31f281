package like

import "github.com/redis/go-redis/v9"

// MaxBatch is the most changes one script call may carry. The script passes a batch's dedup keys
// to MGET and MSET through Lua's unpack, which Redis' Lua limits to about 8,000 values (MSET takes
// two per key); 1,000 also bounds how long one call holds the shard (well under a millisecond).
const MaxBatch = 1000

// changeScript applies an ordered batch of likes and unlikes of one post, as if each ran alone
// in that order, in one atomic call:
//
//	KEYS[1] count   KEYS[2] version   KEYS[3] channel   KEYS[4] batch key
//	KEYS[4+i] dedup key of change i's user
//	ARGV[1] post id   ARGV[2] PUBLISH or SPUBLISH   ARGV[3] one byte per change: L like, U unlike
//	ARGV[4] deadline: the Redis time, in unix milliseconds, after which the batch must not run
//
// It returns {count before the batch, one byte per change}: '1' if change i liked a post not
// liked or unliked a post liked, '0' if it changed nothing. The store derives each change's count
// from these as the script does (results in store.go). A user repeated in one batch is counted
// once: the script tracks each dedup key's state in a Lua table, seeded by one MGET.
//
// Two checks come first, so that the writer's answers stay exact (TestScriptWireFormat pins them):
//
//   - The batch key (rediskeys.Batch, a fresh id per call) holds "<count> <flags>" of a batch that
//     ran, until a second after its deadline. A run that finds it changes nothing and returns
//     that reply: go-redis re-sends a command whose reply a broken connection lost, and a
//     second run would otherwise answer "liked":false to users whose like the first run stored.
//     The re-run rewrites the key (same value and expiry) so that it writes something: WAIT on
//     its connection then also covers the first run's writes (WAIT counts from a connection's
//     last write).
//   - A batch that finds Redis' clock past its deadline fails with a DEADLINE error and changes
//     nothing. Its callers were answered 503 at that deadline (or are about to be), and a change
//     answered 503 must never land afterwards: with two writers, a late like would overwrite
//     the unlike the user made on the other writer after seeing the 503.
//
// Redis work per batch, whatever its size: one TIME, one GET of the batch key, one MGET, one GET
// of the count, at most one MSET, one DEL, one SET of the count, one SET of the batch key, and, if
// anything changed, one version bump and one publish of the final count. A batch of likes only,
// by distinct users, first tries one MSETNX: when none of them had liked (a viral post's likes are
// mostly new users) that stores them all without the MGET, about a fifth less Redis CPU per like;
// when any had, MSETNX writes nothing and the batch takes the general path. The channel is passed
// as a key, not an argument, so that Redis Cluster checks it hashes to the same slot as the post's
// keys (they share the {post} hash tag) and sharded pub/sub publishes it from the shard that
// stores the post.
//
// The version is max(previous + 1, Redis time in unix microseconds); the payload is
// {"post_id":...,"count":...,"ts":version}, byte for byte update.Update.AppendJSON. Numbers go
// through string.format('%d'): Lua's default number formatting would print a microsecond
// timestamp as 1.7e+15. A double holds integers exactly up to 2^53, so microseconds (~2^51 today)
// are exact. An unlike never takes the count below 0 (a count out of step with the dedup keys
// heals instead of going negative).
var changeScript = redis.NewScript(`
local prev = redis.call('GET', KEYS[4])
if prev then
  redis.call('SET', KEYS[4], prev, 'KEEPTTL')
  local sp = string.find(prev, ' ', 1, true)
  return {tonumber(string.sub(prev, 1, sp - 1)), string.sub(prev, sp + 1)}
end
local t = redis.call('TIME')
local deadline = tonumber(ARGV[4])
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline then
  return redis.error_reply('DEADLINE like batch past its deadline, nothing changed')
end
local function finish(reply)
  redis.call('SET', KEYS[4], string.format('%d', reply[1]) .. ' ' .. reply[2], 'PXAT', string.format('%d', deadline + 1000))
  return reply
end
local function publish(count)
  local ver = (tonumber(redis.call('GET', KEYS[2])) or 0) + 1
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if now > ver then ver = now end
  local v = string.format('%d', ver)
  redis.call('SET', KEYS[2], v)
  redis.call(ARGV[2], KEYS[3], '{"post_id":"' .. ARGV[1] .. '","count":' .. string.format('%d', count) .. ',"ts":' .. v .. '}')
end
local ops = ARGV[3]
local n = #ops
local count = tonumber(redis.call('GET', KEYS[1])) or 0
local reply = {count}
if not string.find(ops, 'U', 1, true) then
  local seen, args = {}, {}
  local distinct = true
  for i = 1, n do
    local k = KEYS[i + 4]
    if seen[k] then distinct = false; break end
    seen[k] = true
    args[2 * i - 1] = k
    args[2 * i] = '1'
  end
  if distinct and redis.call('MSETNX', unpack(args, 1, 2 * n)) == 1 then
    count = count + n
    redis.call('SET', KEYS[1], string.format('%d', count))
    publish(count)
    reply[2] = string.rep('1', n)
    return finish(reply)
  end
end
local was = redis.call('MGET', unpack(KEYS, 5, n + 4))
local flags = {}
local liked, firsts, nf = {}, {}, 0
local changed = false
for i = 1, n do
  local k = KEYS[i + 4]
  local s = liked[k]
  if s == nil then
    s = was[i] ~= false
    nf = nf + 1
    firsts[nf] = i
  end
  local c = '0'
  if string.byte(ops, i) == 76 then
    if not s then s = true; count = count + 1; c = '1' end
  elseif s then
    s = false; c = '1'
    if count > 0 then count = count - 1 end
  end
  if c == '1' then changed = true; liked[k] = s elseif liked[k] == nil then liked[k] = s end
  flags[i] = c
end
reply[2] = table.concat(flags)
if not changed then return finish(reply) end
local set, ns, del, nd = {}, 0, {}, 0
for j = 1, nf do
  local i = firsts[j]
  local k = KEYS[i + 4]
  local s = liked[k]
  if s ~= (was[i] ~= false) then
    if s then set[ns + 1] = k; set[ns + 2] = '1'; ns = ns + 2 else nd = nd + 1; del[nd] = k end
  end
end
if ns > 0 then redis.call('MSET', unpack(set, 1, ns)) end
if nd > 0 then redis.call('DEL', unpack(del, 1, nd)) end
if count ~= reply[1] then redis.call('SET', KEYS[1], string.format('%d', count)) end
publish(count)
return finish(reply)
`)
