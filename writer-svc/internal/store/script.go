package store

import (
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/epoch"
	"github.com/likes/likes/writer-svc/internal/ratelimit"
)

// MaxBatch is the most changes one script call may carry. The script passes a batch's dedup keys
// to MGET and MSET through Lua's unpack, which Redis' Lua limits to about 8,000 values (MSET takes
// two per key); 1,000 also bounds how long one call holds the shard (well under a millisecond).
const MaxBatch = 1000

// LikersChunk is how many likers a chunk of a post's likers holds before new likes go to the
// next one. A chunk is a list: 128 ids of a typical length (up to about 60 bytes) fit one
// listpack node of Redis' default list-max-listpack-size (8 KB), longer ones take a second node,
// so a chunk costs about the id's length and a few bytes a liker, and it moves
// in one cheap MIGRATE: a post of 10M likers is 78,000 small keys, not one set whose move would
// block its shard for seconds (docs/SCALING.md). A batch may push one chunk past it (by at most
// one batch), never two.
const LikersChunk = 128

// changeScript applies an ordered batch of likes and unlikes of one post, as if each ran alone
// in that order, and the post's reactions of the same moment, in one atomic call, and keeps the
// post's likers and (on one Redis) each user's index of likes with it:
//
//	KEYS[1] count   KEYS[2] version   KEYS[3] channel   KEYS[4] batch key
//	KEYS[5] the post's current likers chunk number   KEYS[6], KEYS[7] likers chunks ARGV[5], ARGV[5]+1
//	KEYS[7+i] dedup key of change i's user (i = 1..n)
//	KEYS[7+n+j] likers chunk ARGV[6+j] (j = 1..m): where the batch's unliking users' likes are
//	KEYS[7+n+m+i] change i's user's index of likes, when ARGV[7+m+n] is "1"
//	KEYS[b+1] the post's reaction counts, b = 7+n+m (+n with the indexes)
//	KEYS[b+1+k] reaction k's gate (k = 1..r): its user's rate limit on the post
//	KEYS[b+1+r+j] rate limit bucket j (j = 1..q): a client address's or a user's (limits.go)
//	KEYS[c+1], KEYS[c+2] the minute's timeline of likes and of unlikes, c = b+1+r+q (with ARGV[t])
//	KEYS[c+2+i] the minute's timeline of reaction kind i (i = 1..z)
//	ARGV[1] post id   ARGV[2] PUBLISH or SPUBLISH   ARGV[3] one byte per change: L like, U unlike
//	ARGV[4] deadline: the Redis time, in unix milliseconds, after which the batch must not run
//	ARGV[5] the caller's guess of the current chunk number   ARGV[6] m   ARGV[6+j] chunk numbers
//	ARGV[6+m+i] change i's user id   ARGV[7+m+n] "1": update the users' indexes here (one Redis)
//	ARGV[8+m+n] r   ARGV[9+m+n] the reaction interval in milliseconds   ARGV[9+m+n+k] reaction k's kind
//	ARGV[a] q (absent: 0), a = 10+m+n+r   ARGV[a+2j-1], ARGV[a+2j] bucket j's interval (µs) and burst
//	ARGV[a+2q+1] the changes' buckets as runs, space-separated triples "c a u": the next c changes'
//	  address's and user's bucket numbers (0: none)
//	ARGV[a+2q+2] the empty post's expiry in milliseconds (0 or absent: never)
//	ARGV[a+2q+3] the mode: E when KEYS[#KEYS], the call's last key, is the epoch key (one Redis),
//	  D when the state is to be returned for the store to publish after WAIT, not published here
//	ARGV[t] the timeline's minute, its start in unix seconds, t = a+2q+4 (absent: no timeline)
//	ARGV[t+1] when the minute's timeline expires, unix seconds   ARGV[t+2] z   ARGV[t+2+i] kind i
//
// It returns {count before the batch, one byte per change, current chunk number, reactions,
// version, buckets, state} (the version the batch published, 0 when it changed nothing; the
// state, with mode D, the payload it did not publish, else ""):
// '1' if change i liked a post not liked or unliked a post liked, '0' if it changed nothing,
// 'a' or 'u' if its address's or its user's bucket refused it (it then changed nothing);
// reactions is a comma-separated number per reaction, the kind's count after it when it counted,
// or -1 - the milliseconds its user must still wait when the gate refused it; buckets is a
// comma-separated number per bucket, the microseconds it stays empty after the batch (0: it has
// room). The store derives
// each change's count from these as the script does (results in reply.go). A user repeated in one
// batch is counted once: the script tracks each dedup key's state in a Lua table, seeded by one
// MGET. Two replies change nothing and ask for another call: {-1, current chunk} when ARGV[5] is
// neither the current chunk nor the one before it (another writer moved on: the store calls again
// with the number), and {-2, current chunk} when an unliking user's like is in a chunk not passed
// in KEYS (the store reads the dedup keys again). Both come before anything is written, reactions
// included. Every key the script touches is declared, so
// that a Cluster routes it and a slot move answers TRYAGAIN or ASK before it runs, never midway.
//
// Reactions: a reaction counts when its gate is absent; it then sets the gate for the interval
// (SET PX NX), which is at most one reaction per user per post per interval, of any kind, with
// the gate's PTTL as the refusal's Retry-After. The counts are one hash per post (HINCRBY),
// beside its like count in its slot. A batch's reactions and likes share its one version bump and
// its one publish.
//
// Likers: a like's dedup key holds the number of the chunk that lists its user, and the chunk, a
// list, holds the users in the order their likes were stored (RPUSH: O(1) a liker, where a sorted
// set scored by time costs a scan of its listpack per insert, about 10x the Redis CPU). New likes
// fill the current chunk up to LikersChunk, then go to the next one, which becomes current. An
// unlike removes its user from the chunk its dedup key names (LREM: a scan of at most one chunk;
// unlikes are rare). Chunk numbers only grow, so listing chunks from the current one down, each
// from its tail, lists likers newest first (package userlikes).
//
// Index: each user's sorted set of the posts they like, scored by the like's version (read by
// package userlikes). It has no hash tag of the post, so on a Cluster it lives in another slot
// and the script cannot touch it: the store keeps it from outside (clusterindex.go). On one Redis
// (or Sentinel) the script keeps it, and it is exact.
//
// Rate limits: on one Redis a like or an unlike spends a token of its client address's bucket
// and a like one of its user's (LIKE_ADDR_RATE, LIKE_RATE) here, in its batch's call, by
// ratelimit's rule (LuaGCRA) and in the batch's order, rather than in a call of its own per like
// (which would halve a writer's likes). A refused change changes nothing. The buckets are read
// with one MGET and each written once, at the end; a call sent back writes none of them.
//
// Timeline: with ARGV[t], a batch that changed something adds its likes stored, its likes removed
// and its reactions counted, by kind, to the current second of the minute's timeline keys
// (rediskeys.Timeline: BITFIELD INCRBY u32, saturating) and sets their expiry: one BITFIELD and
// one EXPIREAT per series the batch touched, not per change. The writer names the minute from its
// clock and the measured offset to Redis'; a batch that runs a little past the minute's end (or
// before its start) counts in its last (first) second.
//
// Empty posts: a batch that changed something and leaves the post at count 0 with no reactions
// sets the post's keys that stay (count, version, current chunk number) to expire after
// ARGV[a+2q+2] (EMPTY_POST_TTL), one PEXPIRE each: such a post holds nothing a reader needs but
// its version, and without it every post id a like then an unlike named (NEW_POST_ADDR_RATE of
// them a day per address) would hold about 300 bytes for ever. Its likers chunks and dedup keys
// are gone by then (an emptied list is deleted), its batch keys, reaction gates and timeline
// minutes expire on their own. A batch that finds the post at count 0 (so possibly expiring) and
// leaves it with a like or a reaction clears the expiry: the version's SET (and the count's, when
// it changes) already does, a PERSIST each does it for the count and the chunk number. A batch on
// a post that had likes pays nothing for this but a comparison. A post whose keys expired is new
// again: its next change announces its creation again (Creation, below), and a writer that still
// remembers it lets that change pass free of NEW_POST_RATE (likeapi's newPosts): once per expiry
// and remembered post, which is what it was allowed to hold before.
//
// Two checks come first, so that the writer's answers stay exact (TestScriptWireFormat pins them):
//
//   - The batch key (rediskeys.Batch, a fresh id per call) holds "<count>|<flags>|<reactions>|<version>|<buckets>" of
//     a batch that ran, until a second after its deadline. A run that finds it changes nothing
//     and returns that reply (with -1 for the chunk number): go-redis re-sends a command whose reply a broken
//     connection lost, and a second run would otherwise answer "liked":false to users whose like
//     the first run stored. The re-run rewrites the key (same value and expiry) so that it writes
//     something: WAIT on its connection then also covers the first run's writes (WAIT counts from
//     a connection's last write).
//   - A batch that finds Redis' clock past its deadline fails with a DEADLINE error and changes
//     nothing. Its callers were answered 503 at that deadline (or are about to be), and a change
//     answered 503 must never land afterwards: with two writers, a late like would overwrite
//     the unlike the user made on the other writer after seeing the 503.
//
// Redis work per batch, whatever its size: one TIME, one GET of the batch key, one GET of the
// chunk number and one LLEN of its chunk, one MGET, one GET of the count, at most one MSET, one
// DEL, one RPUSH per chunk written and one LREM per unliking user, one SET of the count, one
// SET of the batch key, and, if anything changed, one version bump, one HGETALL of the reaction
// counts, with mode E one INFO replication and one GET of the epoch key, and one publish of the
// final state (returned instead with mode D) (and, the first time, one of the post's creation), and
// then three PEXPIREs if it leaves the post empty or two PERSISTs if it found the count 0 and
// leaves a like or a reaction (Empty posts, above); on one Redis, one ZADD or ZREM per changed user's
// index besides; per reaction, one SET of its gate and one HINCRBY (or a PTTL when refused); with
// rate limits, one MGET of the buckets and one SET per bucket spent. A batch of likes only, by
// distinct users, none of them refused, first tries one MSETNX: when none of them had liked (a viral post's likes are
// mostly new users) that stores them all without the MGET, about a fifth less Redis CPU per like;
// when any had, MSETNX writes nothing and the batch takes the general path. The channel is passed
// as a key, not an argument, so that Redis Cluster checks it hashes to the same slot as the post's
// keys (they share the {post} hash tag) and sharded pub/sub publishes it from the shard that
// stores the post.
//
// Publishing after the replicas (mode D): with REDIS_ACK_REPLICAS the script publishes nothing and
// returns the payload; the store publishes it once WAIT confirmed the batch (ack.go), so that
// viewers are shown only states the replicas have. A re-run (the batch key found) returns the
// post's current state then, which the WAIT after it covers too.
//
// Epoch (mode E): the payload carries the epoch of the primary the script runs on (package
// epoch: an INFO replication and a GET of the epoch key, a SET when the primary changed), once it
// is not 0. On a Cluster no script can reach the epoch key with a post's keys: no epoch there.
//
// Creation: the batch that gives a post its first version (the version key was absent) also
// announces the post on the channel of creations (rediskeys.Created: the post's channel, KEYS[3],
// less its "{post}:ch", then "created"), the post id as the message, after the post's own publish.
// It is a classic PUBLISH on a Cluster too, which every node relays to its subscribers: a fanout
// node keeps the viewers of a post that does not exist off Redis and subscribes to the post's
// channel when it hears of its creation. A post is created at most once per NEW_POST_RATE token,
// so the channel carries little.
//
// The version is max(previous + 1, Redis time in unix microseconds); a post whose keys expired
// (empty, above) starts again from Redis' time, which is above every version it had unless
// Redis' clock went back by more than EMPTY_POST_TTL since its last change (versions track it).
// The payload is
// {"post_id":...,"count":...,"ts":version}, with ,"reactions":{"clap":12,...} (kinds in byte
// order) before the closing brace once the post has any: byte for byte update.Update.AppendJSON,
// the post's whole state, so that the newest update alone is enough for any viewer. Numbers go
// through string.format('%d'): Lua's default number formatting would print a microsecond
// timestamp as 1.7e+15. A double holds integers exactly up to 2^53, so microseconds (~2^51 today)
// are exact. An unlike never takes the count below 0 (a count out of step with the dedup keys
// heals instead of going negative).
var changeScript = redis.NewScript(ratelimit.LuaGCRA + epoch.Lua + luaPayload + `
local ops = ARGV[3]
local n = #ops
local m = tonumber(ARGV[6])
local index = ARGV[7 + m + n] == '1'
local kb = 7 + n + m
if index then kb = kb + n end
local r = tonumber(ARGV[8 + m + n])
local la = 10 + m + n + r
local q = tonumber(ARGV[la]) or 0
local mode = ARGV[la + 2 * q + 3] or ''
local withEpoch, deferred = string.find(mode, 'E', 1, true) ~= nil, string.find(mode, 'D', 1, true) ~= nil
local function payload(v, cnt)
  local ek = false
  if withEpoch then ek = KEYS[#KEYS] end
  return statePayload(ARGV[1], v, cnt, KEYS[kb + 1], ek)
end
local prev = redis.call('GET', KEYS[4])
if prev then
  redis.call('SET', KEYS[4], prev, 'KEEPTTL')
  local c, f, x, v, l = string.match(prev, '^(%d+)|([01au]*)|([^|]*)|(%d*)|([^|]*)$')
  local late = ''
  local ver = redis.call('GET', KEYS[2])
  if deferred and ver and (tonumber(v) or 0) > 0 then
    late = payload(ver, tonumber(redis.call('GET', KEYS[1])) or 0)
  end
  return {tonumber(c), f, -1, x, tonumber(v) or 0, l, late}
end
local t = redis.call('TIME')
local deadline = tonumber(ARGV[4])
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > deadline then
  return redis.error_reply('DEADLINE like batch past its deadline, nothing changed')
end
local guess = tonumber(ARGV[5])
local cur = tonumber(redis.call('GET', KEYS[5])) or 0
if n > 0 and cur ~= guess and cur ~= guess + 1 then return {-1, cur} end
local lnow = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat, every, burst, spent, limited = {}, {}, {}, {}, {}
if q > 0 then
  local st = redis.call('MGET', unpack(KEYS, kb + 2 + r, kb + 1 + r + q))
  for j = 1, q do
    tat[j] = tonumber(st[j])
    every[j] = tonumber(ARGV[la + 2 * j - 1])
    burst[j] = tonumber(ARGV[la + 2 * j])
  end
  local function take(j)
    if j == 0 then return true end
    local nt = gcra(tat[j], lnow, every[j], burst[j])
    if not nt then return false end
    tat[j] = nt
    spent[j] = true
    return true
  end
  -- takeRun spends up to c tokens of bucket j at once and returns how many it gave: what c
  -- takes in a row would give (gcra at one instant: the k-th token, from 0, fits while k
  -- intervals fit in the slack, and after the first refusal every later one is refused too).
  -- Every number is a whole count of microseconds far below 2^53, so the floor is exact.
  local function takeRun(j, c)
    local t0, e = tat[j], every[j]
    if not t0 or t0 < lnow then t0 = lnow end
    local slack = e * (burst[j] - 1) + lnow - t0
    if slack < 0 then return 0 end
    local ok = math.min(c, math.floor(slack / e) + 1)
    tat[j] = t0 + ok * e
    spent[j] = true
    return ok
  end
  local nops, any, i = {}, false, 0
  for c, a, u in string.gmatch(ARGV[la + 2 * q + 1], '(%d+) (%d+) (%d+)') do
    c, a, u = tonumber(c), tonumber(a), tonumber(u)
    if a == 0 or u == 0 then -- a run on one bucket (or none): its first ok changes pass
      local j, flag = a + u, 'a'
      if a == 0 then flag = 'u' end
      local ok = c
      if j > 0 then ok = takeRun(j, c) end
      nops[#nops + 1] = string.sub(ops, i + 1, i + ok)
      if ok < c then
        any = true
        nops[#nops + 1] = string.rep('N', c - ok)
        for x = i + ok + 1, i + c do limited[x] = flag end
      end
      i = i + c
    else
      for x = i + 1, i + c do
        if not take(a) then limited[x] = 'a'
        elseif not take(u) then limited[x] = 'u' end
        if limited[x] then nops[#nops + 1] = 'N'; any = true else nops[#nops + 1] = string.sub(ops, x, x) end
      end
      i = i + c
    end
  end
  if any then ops = table.concat(nops) end
end
local chunkKey = {[guess] = KEYS[6], [guess + 1] = KEYS[7]}
for j = 1, m do chunkKey[tonumber(ARGV[6 + j])] = KEYS[7 + n + j] end
local room = 0
if n > 0 then room = ` + strconv.Itoa(LikersChunk) + ` - redis.call('LLEN', chunkKey[cur]) end
local top = cur
local function place()
  if top == cur and room <= 0 and cur == guess then top = cur + 1 end
  room = room - 1
  return top
end
local ver, created
local late = ''
local function version()
  if not ver then
    local was = redis.call('GET', KEYS[2])
    created = not was
    ver = (tonumber(was) or 0) + 1
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if now > ver then ver = now end
  end
  return ver
end
local count = tonumber(redis.call('GET', KEYS[1])) or 0
local reply = {count, ''}
local rx, reacted = {}, false
local function react()
  if r == 0 then return end
  local every = ARGV[9 + m + n]
  for k = 1, r do
    local gate = KEYS[kb + 1 + k]
    if redis.call('SET', gate, '1', 'PX', every, 'NX') then
      rx[k] = string.format('%d', redis.call('HINCRBY', KEYS[kb + 1], ARGV[9 + m + n + k], 1))
      reacted = true
    else
      rx[k] = string.format('%d', -1 - math.max(redis.call('PTTL', gate), 0))
    end
  end
end
local function timeline()
  local lt = la + 2 * q + 4
  local th = tonumber(ARGV[lt])
  if not th then return end
  local sec = tonumber(t[1]) - th
  if sec < 0 then sec = 0 elseif sec > 59 then sec = 59 end
  local at, kt = '#' .. string.format('%d', sec), kb + 1 + r + q
  local function add(key, count)
    if count > 0 then
      redis.call('BITFIELD', key, 'OVERFLOW', 'SAT', 'INCRBY', 'u32', at, count)
      redis.call('EXPIREAT', key, ARGV[lt + 1])
    end
  end
  local liked, unliked, f = 0, 0, reply[2]
  for i = 1, #f do
    if string.byte(f, i) == 49 then
      if string.byte(ops, i) == 76 then liked = liked + 1 else unliked = unliked + 1 end
    end
  end
  add(KEYS[kt + 1], liked)
  add(KEYS[kt + 2], unliked)
  if not reacted then return end
  local byKind = {}
  for k = 1, r do
    if string.byte(rx[k], 1) ~= 45 then
      local kind = ARGV[9 + m + n + k]
      byKind[kind] = (byKind[kind] or 0) + 1
    end
  end
  for i = 1, tonumber(ARGV[lt + 2]) do add(KEYS[kt + 2 + i], byKind[ARGV[lt + 2 + i]] or 0) end
end
local function finish()
  timeline()
  local x = table.concat(rx, ',')
  local v = string.format('%d', ver or 0)
  local w = {}
  for j = 1, q do
    if spent[j] then
      redis.call('SET', KEYS[kb + 1 + r + j], string.format('%d', tat[j]), 'PX', math.ceil((tat[j] - lnow) / 1000))
    end
    local wait = 0
    if tat[j] then wait = math.max(math.ceil(tat[j] - every[j] * (burst[j] - 1) - lnow), 0) end
    w[j] = string.format('%d', wait)
  end
  local l = table.concat(w, ',')
  redis.call('SET', KEYS[4], string.format('%d', reply[1]) .. '|' .. reply[2] .. '|' .. x .. '|' .. v .. '|' .. l, 'PXAT', string.format('%d', deadline + 1000))
  reply[3] = top
  reply[4] = x
  reply[5] = ver or 0
  reply[6] = l
  reply[7] = late
  return reply
end
local function store(adds, rems, idxAdd, idxRem)
  local v = string.format('%d', version())
  for k, us in pairs(adds) do redis.call('RPUSH', k, unpack(us)) end
  for k, us in pairs(rems) do
    for _, u in ipairs(us) do redis.call('LREM', k, 1, u) end
  end
  if index then
    local call, post = redis.call, ARGV[1] -- locals: a command per changed user
    for i = 1, #idxAdd do call('ZADD', idxAdd[i], v, post) end
    for i = 1, #idxRem do call('ZREM', idxRem[i], post) end
  end
  if top ~= cur then redis.call('SET', KEYS[5], string.format('%d', top)) end
  if count ~= reply[1] then redis.call('SET', KEYS[1], string.format('%d', count)) end
  redis.call('SET', KEYS[2], v)
  local p, reactions = payload(v, count)
  if deferred then late = p else redis.call(ARGV[2], KEYS[3], p) end
  if count == 0 and not reactions then
    local ttl = tonumber(ARGV[la + 2 * q + 2]) or 0
    if ttl > 0 then
      redis.call('PEXPIRE', KEYS[1], ttl)
      redis.call('PEXPIRE', KEYS[2], ttl)
      redis.call('PEXPIRE', KEYS[5], ttl)
    end
  elseif reply[1] == 0 then
    redis.call('PERSIST', KEYS[1])
    redis.call('PERSIST', KEYS[5])
  end
  if created then
    redis.call('PUBLISH', string.sub(KEYS[3], 1, #KEYS[3] - #ARGV[1] - 5) .. 'created', ARGV[1])
  end
end
if n == 0 then
  react()
  if reacted then store({}, {}, {}, {}) end
  return finish()
end
if not string.find(ops, '[UN]') then
  local seen, args, adds, idx, named = {}, {}, {}, {}, {}
  local distinct = true
  for i = 1, n do
    local k = KEYS[i + 7]
    if seen[k] then distinct = false; break end
    seen[k] = true
    local c = place()
    local cn = named[c]
    if not cn then cn = string.format('%d', c); named[c] = cn end
    args[2 * i - 1] = k
    args[2 * i] = cn
    local ck = chunkKey[c]
    local us = adds[ck]
    if not us then us = {}; adds[ck] = us end
    us[#us + 1] = ARGV[6 + m + i]
    if index then idx[i] = KEYS[7 + n + m + i] end
  end
  if distinct and redis.call('MSETNX', unpack(args, 1, 2 * n)) == 1 then
    count = count + n
    reply[2] = string.rep('1', n)
    react()
    store(adds, {}, idx, {})
    return finish()
  end
  room = ` + strconv.Itoa(LikersChunk) + ` - redis.call('LLEN', chunkKey[cur])
  top = cur
end
local was = redis.call('MGET', unpack(KEYS, 8, n + 7))
local flags = {}
local liked, firsts, nf = {}, {}, 0
local changed = false
for i = 1, n do
  local k = KEYS[i + 7]
  local s = liked[k]
  if s == nil then
    s = was[i] ~= false
    nf = nf + 1
    firsts[nf] = i
  end
  local c = '0'
  local op = string.byte(ops, i)
  if op == 76 then
    if not s then s = true; count = count + 1; c = '1' end
  elseif op == 85 and s then
    s = false; c = '1'
    if count > 0 then count = count - 1 end
  end
  if c == '1' then changed = true end
  liked[k] = s
  flags[i] = limited[i] or c
end
reply[2] = table.concat(flags)
if not changed then
  react()
  if reacted then store({}, {}, {}, {}) end
  return finish()
end
local set, ns, del, nd = {}, 0, {}, 0
local adds, rems, idxAdd, idxRem = {}, {}, {}, {}
for j = 1, nf do
  local i = firsts[j]
  local k = KEYS[i + 7]
  local s = liked[k]
  local user = ARGV[6 + m + i]
  if s and was[i] == false then
    local c = place()
    set[ns + 1] = k; set[ns + 2] = string.format('%d', c); ns = ns + 2
    local ck = chunkKey[c]
    if not adds[ck] then adds[ck] = {} end
    table.insert(adds[ck], user)
    if index then table.insert(idxAdd, KEYS[7 + n + m + i]) end
  elseif not s and was[i] ~= false then
    nd = nd + 1; del[nd] = k
    local c = tonumber(was[i])
    if c ~= nil then
      local ck = chunkKey[c]
      if not ck then return {-2, cur} end
      if not rems[ck] then rems[ck] = {} end
      table.insert(rems[ck], user)
    end
    if index then table.insert(idxRem, KEYS[7 + n + m + i]) end
  end
end
if ns > 0 then redis.call('MSET', unpack(set, 1, ns)) end
if nd > 0 then redis.call('DEL', unpack(del, 1, nd)) end
react()
store(adds, rems, idxAdd, idxRem)
return finish()
`)
