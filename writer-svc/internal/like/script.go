package like

import "github.com/redis/go-redis/v9"

// The scripts' keys and arguments. The channel is passed as a key, not an argument, so that Redis
// Cluster checks it hashes to the same slot as the post's keys (they share the {post} hash tag)
// and sharded pub/sub publishes it from the shard that stores the post.
//
//	KEYS[1] dedup key of (post, user)   KEYS[2] count   KEYS[3] version   KEYS[4] channel
//	ARGV[1] post id                      ARGV[2] PUBLISH or SPUBLISH
//
// Both return {count, changed} with changed 1 when the script stored and published a change.

// bumpAndPublish sets the post's version to max(previous + 1, Redis time in unix microseconds) and
// publishes {"post_id":...,"count":...,"ts":version}, byte for byte update.Update.AppendJSON.
// Numbers go through string.format('%d'): Lua's default number formatting would print a
// microsecond timestamp as 1.7e+15. A double holds integers exactly up to 2^53, so microseconds
// (~2^51 today) are exact.
const bumpAndPublish = `
local function bump_and_publish(count)
  local t = redis.call('TIME')
  local ver = (tonumber(redis.call('GET', KEYS[3])) or 0) + 1
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if now > ver then ver = now end
  local v = string.format('%d', ver)
  redis.call('SET', KEYS[3], v)
  redis.call(ARGV[2], KEYS[4], '{"post_id":"' .. ARGV[1] .. '","count":' .. string.format('%d', count) .. ',"ts":' .. v .. '}')
end
`

// likeScript records a like once: SET NX the dedup key; only if it was new INCR and publish.
var likeScript = redis.NewScript(bumpAndPublish + `
if not redis.call('SET', KEYS[1], '1', 'NX') then
  return {tonumber(redis.call('GET', KEYS[2])) or 0, 0}
end
local count = redis.call('INCR', KEYS[2])
bump_and_publish(count)
return {count, 1}
`)

// unlikeScript removes a like once: DEL the dedup key; only if it existed DECR (never below 0) and
// publish. Repeating it changes nothing.
var unlikeScript = redis.NewScript(bumpAndPublish + `
if redis.call('DEL', KEYS[1]) == 0 then
  return {tonumber(redis.call('GET', KEYS[2])) or 0, 0}
end
local count = redis.call('DECR', KEYS[2])
if count < 0 then
  redis.call('SET', KEYS[2], '0')
  count = 0
end
bump_and_publish(count)
return {count, 1}
`)
