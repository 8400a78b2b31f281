#!/usr/bin/env bash
# publish-cost.sh — what a post's subscribers cost the Redis that publishes to them (should
# fanout nodes subscribe on a replica instead of the primary?). One redis-server on CPU 1
# with K subscribers (redis-cli, one per fanout node that holds the post) on its channel;
# redis-benchmark on CPU 0 sends N PUBLISHes of a count update. Prints, per K, Redis's CPU per
# PUBLISH (INFO cpu, user + sys) and the part each subscriber adds.
#
# Usage: scripts/alone.sh scripts/publish-cost.sh      Environment: SUBSCRIBERS (0 1 4 16), N (500000)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PUBLISH_COST_PORT:-28479}
N=${N:-500000}
SUBSCRIBERS=${SUBSCRIBERS:-0 1 4 16}
payload='{"post_id":"42","count":123456,"ts":1764500000123456}'
channel='likes:{42}:ch'

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
fi
dir=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
taskset -c 1 redis-server --port "$PORT" --save "" --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
pids+=($!)
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.1; done

cpu() { redis-cli -p "$PORT" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.6f", s }'; }
echo "subscribers publishes redis-cpu-s us-per-publish"
for k in $SUBSCRIBERS; do
  subs=()
  for _ in $(seq "$k"); do
    taskset -c 0 redis-cli -p "$PORT" subscribe "$channel" >/dev/null &
    subs+=($!)
  done
  until [[ $(redis-cli -p "$PORT" pubsub numsub "$channel" | tail -n 1) == "$k" ]]; do sleep 0.1; done
  before=$(cpu)
  taskset -c 0 redis-benchmark -p "$PORT" -n "$N" -c 8 -P 16 -q publish "$channel" "$payload" >/dev/null
  after=$(cpu)
  awk -v k="$k" -v n="$N" -v a="$before" -v b="$after" 'BEGIN { printf "%d %d %.3f %.3f\n", k, n, b - a, (b - a) / n * 1e6 }'
  if [[ ${#subs[@]} -gt 0 ]]; then # a bare `wait` would wait for redis-server too
    kill "${subs[@]}" 2>/dev/null || true
    wait "${subs[@]}" 2>/dev/null || true
  fi
done
