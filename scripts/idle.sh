#!/usr/bin/env bash
# idle.sh — what an idle viewer costs a node a second: one fanout-svc on CPU 0,
# redis-server and `loadgen churn` (VIEWERS streams opened at 1,000 a second and held past the measurement) on
# CPU 1. It reads the node's CPU over SECONDS with no viewer, then over SECONDS with VIEWERS idle
# viewers (no like, no churn: their posts' watching numbers stay put), and prints the difference
# per viewer per second and the heartbeats the node wrote a second (a ping each HEARTBEAT_INTERVAL
# of silence; a viewer that got any frame within the interval gets none).
#
# CHURN (0) streams a second, each held 1 s, join and leave the same posts during the second
# measurement (scripts/watching-cost.sh sets it): what the watching numbers cost a node with
# churn is then a run with WATCHING_INTERVAL=2s minus one with 0.
#
# Usage: scripts/alone.sh scripts/idle.sh
# Environment (defaults): VIEWERS (18000), CHURN (0), SECONDS_IDLE (60), POSTS (10), HEARTBEAT_INTERVAL
# (15s), BIN (bin), IDLE_DIR (.run/idle), IDLE_PORT_BASE (28000: redis +379, fanout +90).
set -euo pipefail
cd "$(dirname "$0")/.."
VIEWERS=${VIEWERS:-18000}
CHURN=${CHURN:-0}
SECONDS_IDLE=${SECONDS_IDLE:-60}
POSTS=${POSTS:-10}
BIN=${BIN:-bin}
LOG_DIR=${IDLE_DIR:-.run/idle}
base=${IDLE_PORT_BASE:-28000}
redis_port=$((base + 379)) node_port=$((base + 90))
mkdir -p "$LOG_DIR"
for b in fanout-svc loadgen; do [[ -x $BIN/$b ]] || { echo "idle: $BIN/$b missing: run make build first" >&2; exit 1; }; done
# shellcheck source=scripts/lib/procs.sh
source scripts/lib/procs.sh
for p in $redis_port $node_port; do port_free "$p" || { echo "idle: port $p is in use" >&2; exit 1; }; done

start_redis "$redis_port" taskset -c 1
# Every viewer comes from 127.0.0.1: no cap per address (5,000 by default).
LISTEN_ADDR=127.0.0.1:$node_port REDIS_URL=redis://127.0.0.1:$redis_port LOG_LEVEL=warn MAX_VIEWERS_PER_IP=0 \
  taskset -c 0 "$BIN/fanout-svc" >"$LOG_DIR/fanout.log" 2>&1 &
pids+=($!)
url=http://127.0.0.1:$node_port
wait_http "$url/healthz" fanout

# metric NAME: the node's unlabelled sample.
metric() { curl -fsS "$url/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
# cpu_over: the node's CPU seconds and heartbeats over SECONDS_IDLE, "cpu heartbeats".
cpu_over() {
  local c0 h0
  c0=$(metric process_cpu_seconds_total) h0=$(metric likes_fanout_heartbeats_total)
  sleep "$SECONDS_IDLE"
  awk -v c0="$c0" -v c1="$(metric process_cpu_seconds_total)" -v h0="$h0" -v h1="$(metric likes_fanout_heartbeats_total)" \
    'BEGIN { printf "%.4f %d\n", c1 - c0, h1 - h0 }'
}

sleep 5
read -r cpu_none _ < <(cpu_over)
# At 1,000 a second (churn's ticker, on a core shared with Redis, falls behind: 16,000 of the
# 18,000 connect in time); the figures are per viewer connected, so fewer change nothing.
rate=1000
opening=$(awk -v v="$VIEWERS" -v r="$rate" 'BEGIN { printf "%.0f", v / r }')
prefix="idle$(date +%s)-"
taskset -c 1 "$BIN/loadgen" churn --fanout "$url" --rate "$rate" --duration "${opening}s" \
  --hold "$((opening + SECONDS_IDLE * 2 + 60))s" --posts "$POSTS" --post-prefix "$prefix" >"$LOG_DIR/churn.log" 2>&1 &
pids+=($!)
sleep "$((opening + 5))"
viewers=$(metric likes_fanout_viewers)
((viewers * 2 >= VIEWERS)) || { echo "idle: only $viewers of $VIEWERS viewers connected; log: $LOG_DIR/churn.log" >&2; exit 1; }
if ((CHURN > 0)); then # as many viewers joining and leaving the same posts a second, each held 1 s
  taskset -c 1 "$BIN/loadgen" churn --fanout "$url" --rate "$CHURN" --duration "$((SECONDS_IDLE + 30))s" \
    --hold 1s --posts "$POSTS" --post-prefix "$prefix" >"$LOG_DIR/churn-live.log" 2>&1 &
  pids+=($!)
fi
sleep 5 # past the connects' own work (first frames, the watching numbers' last change)
read -r cpu_idle beats < <(cpu_over)
awk -v none="$cpu_none" -v idle="$cpu_idle" -v v="$viewers" -v s="$SECONDS_IDLE" -v b="$beats" 'BEGIN {
  printf "node CPU over %d s: %.3f s with no viewer, %.3f s with %d idle viewers\n", s, none, idle, v
  printf "idle cost: %.3f us per viewer per second (%.2f%% of a core); %.0f heartbeats/s (%.3f per viewer per second)\n",
    (idle - none) * 1e6 / (v * s), (idle - none) / s * 100, b / s, b / s / v
  printf "result: viewers %d cpu_pct %.3f none_pct %.3f\n", v, idle / s * 100, none / s * 100 }'
