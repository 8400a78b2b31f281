package store

import (
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/epoch"
)

// luaPayload defines statePayload(post, version, count, reactionsKey, epochKey) for the scripts
// that publish a post's state: its whole state as update.Update.AppendJSON writes it,
// {"post_id":...,"count":...,"ts":version} with ,"epoch":E after the ts once the epoch is not 0
// (epochKey false: no epoch, as on a Cluster) and ,"reactions":{"clap":12,...} (kinds in byte
// order) before the closing brace once the post has any. It also returns whether the post has
// reactions. It needs epoch.Lua before it.
const luaPayload = `
local function statePayload(post, v, cnt, rxKey, epochKey)
  local p = '{"post_id":"' .. post .. '","count":' .. string.format('%d', cnt) .. ',"ts":' .. v
  if epochKey then
    local e = currentEpoch(epochKey)
    if e > 0 then p = p .. ',"epoch":' .. string.format('%d', e) end
  end
  local h = redis.call('HGETALL', rxKey)
  if #h == 0 then return p .. '}', false end
  local kinds, byKind = {}, {}
  for i = 1, #h, 2 do kinds[#kinds + 1] = h[i]; byKind[h[i]] = h[i + 1] end
  table.sort(kinds)
  for i, k in ipairs(kinds) do kinds[i] = '"' .. k .. '":' .. byKind[k] end
  return p .. ',"reactions":{' .. table.concat(kinds, ',') .. '}}', true
end
`

// stateScript returns a post's state as the change script publishes it, for a publish that had to
// wait (late.go), and writes it to the version key again (the same value, its expiry kept): that
// write makes a WAIT on its connection cover every change the primary holds of the post.
//
//	KEYS[1] count   KEYS[2] version   KEYS[3] reactions   KEYS[4] epoch key (with ARGV[2] "E")
//	ARGV[1] post id   ARGV[2] "E": give the epoch (one Redis), else none (a Cluster)
//
// It returns "" for a post with no version (nothing to show, or expired since).
var stateScript = redis.NewScript(epoch.Lua + luaPayload + `
local v = redis.call('GET', KEYS[2])
if not v then return '' end
redis.call('SET', KEYS[2], v, 'KEEPTTL')
local ek = false
if ARGV[2] == 'E' then ek = KEYS[4] end
return (statePayload(ARGV[1], v, tonumber(redis.call('GET', KEYS[1])) or 0, KEYS[3], ek))
`)
