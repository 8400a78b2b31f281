#!/usr/bin/env bash
# migrate-cost.sh — what moving a post's likers costs a slot move (docs/SCALING.md): one
# sorted set of LIKERS members against the same likers in lists of 128 (the like script's chunks),
# moved with MIGRATE between two fresh redis-servers, as slotmove/internal/slotmove moves a slot's keys. MIGRATE
# blocks the source while it serializes and sends a key and the target while it restores it, so the
# longest single call is how long every other post of both shards waits.
#
# Prints, for each layout: keys, the longest MIGRATE call and the total, in ms.
#
# Usage: scripts/migrate-cost.sh              e.g. LIKERS=10000000 scripts/alone.sh scripts/migrate-cost.sh
# Environment (defaults): LIKERS (10000000), CHUNK (128), KEYS_PER_CALL (10000: slotmove's -batch),
# MIGRATE_PORT_BASE (28500), CPUS (1: both servers; the client runs beside them).
set -euo pipefail
cd "$(dirname "$0")/.."
LIKERS=${LIKERS:-10000000}
CHUNK=${CHUNK:-128}
KEYS_PER_CALL=${KEYS_PER_CALL:-10000}
BASE=${MIGRATE_PORT_BASE:-28500}
CPUS=${CPUS:-1}
SRC=$BASE DST=$((BASE + 1))
for c in redis-server redis-cli taskset; do
  command -v "$c" >/dev/null || { echo "migrate-cost: $c not found" >&2; exit 1; }
done
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for port in $SRC $DST; do
  taskset -c "$CPUS" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --daemonize no --logfile "" >/dev/null 2>&1 &
  pids+=($!)
done
for port in $SRC $DST; do
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
src() { redis-cli -p "$SRC" "$@"; }
now_ms() { date +%s%3N; }

# Fill: one Lua call adds 10,000 likers (user ids as the writer's tests): to one sorted set (score =
# the liker's index), or RPUSHed to lists of chunk likers each.
fill=$(cat <<'LUA'
local key, from, to, chunk = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local args = {}
for i = from, to do
  if chunk == 0 then args[#args + 1] = i end
  args[#args + 1] = 'user-' .. i
  if chunk > 0 and ((i + 1) % chunk == 0 or i == to) then
    redis.call('RPUSH', key .. ':' .. math.floor(i / chunk), unpack(args)); args = {}
  elseif chunk == 0 and i == to then
    redis.call('ZADD', key, unpack(args)); args = {}
  elseif #args >= 7000 then
    redis.call('ZADD', key, unpack(args)); args = {}
  end
end
LUA
)
load_likers() { # $1 key (prefix), $2 chunk (0: one set)
  local i=0
  while ((i < LIKERS)); do
    src eval "$fill" 1 "$1" "$i" "$((i + 9999 < LIKERS - 1 ? i + 9999 : LIKERS - 1))" "$2" >/dev/null
    i=$((i + 10000))
  done
}

# One sorted set.
load_likers 'likes:{viral}:likers' 0
echo "one set: $(src zcard 'likes:{viral}:likers') members, $(src memory usage 'likes:{viral}:likers' samples 0) bytes"
t0=$(now_ms)
src migrate 127.0.0.1 "$DST" 'likes:{viral}:likers' 0 600000 >/dev/null
t1=$(now_ms)
echo "one set: keys 1  longest_call_ms $((t1 - t0))  total_ms $((t1 - t0))"
redis-cli -p "$DST" flushall >/dev/null

# Chunks of CHUNK, moved KEYS_PER_CALL at a time.
load_likers 'likes:{viral}:lk' "$CHUNK"
nkeys=$(src dbsize)
echo "chunks: $nkeys keys of up to $CHUNK, encoding $(src object encoding 'likes:{viral}:lk:0')"
longest=0 total=0
mapfile -t all < <(src --scan --pattern 'likes:{viral}:lk:*')
for ((i = 0; i < ${#all[@]}; i += KEYS_PER_CALL)); do
  t0=$(now_ms)
  src migrate 127.0.0.1 "$DST" "" 0 600000 KEYS "${all[@]:i:KEYS_PER_CALL}" >/dev/null
  t1=$(now_ms)
  d=$((t1 - t0)) total=$((total + t1 - t0))
  ((d > longest)) && longest=$d
done
echo "chunks: keys $nkeys  longest_call_ms $longest  total_ms $total  left_on_source $(src dbsize)"
