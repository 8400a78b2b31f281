#!/usr/bin/env bash
# flood-cost.sh — what a one-address flood costs Redis: starts a fresh redis-server and one
# writer-svc with its default limits, floods it from one address with likes of one post, each by a
# new user (scripts/wrk-likes.lua), and prints:
#   req/s       requests answered per second (any status)
#   refused     requests answered 429
#   redis_cpu_s Redis CPU (INFO cpu, user+sys) over the flood, in seconds
#   us/refused  Redis CPU per refused request, in microseconds: what refused work still costs
#
# MODE=compare runs the same flood twice, against the default writer and against one with the
# address limits off (LIKE_ADDR_RATE=off NEW_POST_ADDR_RATE=off), and prints likes/s of each and
# their ratio: what the default limits cost accepted work.
#
# CPU layout (taskset): the writer and wrk on WRITER_CPUS (0), redis-server alone on REDIS_CPUS (1).
# Run it alone on the machine (scripts/alone.sh): figures taken beside other work measure that work.
#
# Usage: scripts/flood-cost.sh            (MODE=flood, the default)
#        MODE=compare scripts/flood-cost.sh
# Environment (defaults): BIN (bin), CONNS (64), THREADS (2), DURATION (10s), POST (hot),
# BENCH_PORT_BASE (28100: redis +379, writer +80), BENCH_DIR (.run/flood-cost).
set -euo pipefail

# The flood names a new user in X-User-ID on every request, so the per-user bucket never refuses and
# only the per-address one does: the writer must believe the header here.
export TRUST_USER_HEADER=${TRUST_USER_HEADER:-true}

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
MODE=${MODE:-flood}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10s}
POST=${POST:-hot}
BENCH_PORT_BASE=${BENCH_PORT_BASE:-28100}
BENCH_DIR=${BENCH_DIR:-.run/flood-cost}
REDIS_CPUS=${REDIS_CPUS:-1}
WRITER_CPUS=${WRITER_CPUS:-0}
REDIS_PORT=$((BENCH_PORT_BASE + 379))
WRITER_PORT=$((BENCH_PORT_BASE + 80))
url=http://127.0.0.1:$WRITER_PORT

[[ -x $BIN/writer-svc ]] || { echo "flood-cost: $BIN/writer-svc missing: run make build" >&2; exit 1; }
for c in redis-server redis-cli wrk taskset curl; do
  command -v "$c" >/dev/null || { echo "flood-cost: $c not found (apt-get install -y redis-server redis-tools wrk util-linux curl)" >&2; exit 1; }
done
mkdir -p "$BENCH_DIR"

pids=()
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  exit "$code"
}
trap cleanup EXIT INT TERM

rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
redis_cpu() { rcli info cpu | tr -d '\r' | awk -F: '$1=="used_cpu_sys"||$1=="used_cpu_user"{s+=$2} END{printf "%.6f", s}'; }

# start_pair NAME [VAR=VALUE...]: a fresh Redis and a writer with the given environment.
start_pair() {
  local name=$1
  shift
  taskset -c "$REDIS_CPUS" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --daemonize no >"$BENCH_DIR/redis-$name.log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  for _ in $(seq 100); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
  env "$@" LISTEN_ADDR=127.0.0.1:$WRITER_PORT REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0 LOG_LEVEL=${LOG_LEVEL:-error} \
    taskset -c "$WRITER_CPUS" "$BIN/writer-svc" >"$BENCH_DIR/writer-$name.log" 2>&1 &
  writer_pid=$!
  pids+=("$writer_pid")
  for _ in $(seq 100); do curl -fsS -o /dev/null "$url/readyz" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null "$url/readyz" || { echo "flood-cost: writer ($name) not ready, see $BENCH_DIR/writer-$name.log" >&2; exit 1; }
}

stop_pair() {
  kill -TERM "$writer_pid" "$redis_pid" 2>/dev/null || true
  wait "$writer_pid" "$redis_pid" 2>/dev/null || true
}

# flood NAME: one wrk run against the running pair; sets req, refused, secs, acked, cpu.
flood() {
  local name=$1 r0 r1 out
  r0=$(redis_cpu)
  out=$(taskset -c "$WRITER_CPUS" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -s scripts/wrk-likes.lua "$url" -- "$POST" "run$$$name" 0)
  r1=$(redis_cpu)
  echo "$out" >"$BENCH_DIR/wrk-$name.txt"
  curl -fsS "$url/metrics" >"$BENCH_DIR/metrics-$name.txt" 2>/dev/null || true
  req=$(echo "$out" | awk '/requests in/{print $1}')
  secs=$(echo "$out" | awk '/requests in/{sub(/s,$/, "", $4); print $4}')
  local non2xx
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  non2xx=${non2xx:-0}
  acked=$((req - non2xx))
  # wrk counts every non-2xx together; the writer's metrics tell 429s apart, and with one post and
  # a new user per request nothing else is refused, so non-2xx is the refused count when they agree.
  refused=$non2xx
  cpu=$(awk -v a="$r0" -v b="$r1" 'BEGIN{printf "%.3f", b - a}')
}

case $MODE in
flood)
  start_pair default
  flood default
  awk -v req="$req" -v secs="$secs" -v refused="$refused" -v acked="$acked" -v cpu="$cpu" 'BEGIN {
    printf "req/s %.0f  requests %d  acked %d  refused %d  redis_cpu_s %s  us/refused %.2f\n",
      req / secs, req, acked, refused, cpu, (refused ? cpu * 1e6 / refused : 0)
  }'
  ;;
compare)
  start_pair default
  flood default
  d_acked=$acked d_secs=$secs d_cpu=$cpu
  stop_pair
  start_pair off LIKE_ADDR_RATE=off NEW_POST_ADDR_RATE=off
  flood off
  awk -v da="$d_acked" -v ds="$d_secs" -v dc="$d_cpu" -v oa="$acked" -v os="$secs" -v oc="$cpu" 'BEGIN {
    d = da / ds; o = oa / os
    printf "default likes/s %.0f  redis_cpu_s %s\nlimits off likes/s %.0f  redis_cpu_s %s\nratio default/off %.2f\n",
      d, dc, o, oc, (o ? d / o : 0)
  }'
  ;;
*)
  echo "flood-cost: MODE must be flood or compare, not $MODE" >&2
  exit 2
  ;;
esac
