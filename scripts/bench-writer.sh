#!/usr/bin/env bash
# bench-writer.sh — what one hot post costs the write path: starts a fresh redis-server and one
# writer-svc, drives the writer with wrk (scripts/wrk-likes.lua: likes of one post, each by a new
# user), and prints one line of figures:
#   likes/s       likes acknowledged (2xx) per second
#   redis_us      Redis CPU (INFO cpu, user+sys) per acknowledged like, in microseconds
#   per_call      likes per script call (INFO commandstats evalsha calls), script_us its usec_per_call
#   writer_us     writer-svc CPU (/proc/PID/stat) per acknowledged like, in microseconds
#   p50, p99      wrk's like latency percentiles
#   mem_b         Redis memory (INFO memory used_memory) per like stored during the run, in bytes:
#                 the dedup keys, likers chunks and users' indexes of likes by new users
#   missing       acknowledged likes not in the post's count (must be 0); unacked = stored but not
#                 acknowledged (requests in flight when wrk stopped)
#
# CPU layout (taskset): REDIS_CPUS (default 1) for redis-server alone; WRITER_CPUS (0) and WRK_CPUS
# (0) for the writer and the generator.
#
# Usage: scripts/bench-writer.sh          MODE=reads scripts/bench-writer.sh (what a read costs, below)
# Environment (defaults): BIN (bin: the directory holding writer-svc), CONNS (64), THREADS (2),
# DURATION (20s), DELAY_MS (0: closed loop; N: each connection waits N ms between its answer and
# its next like), POST (hot), REPLICAS (0: replicas of the redis-server, on REDIS_CPUS too, for
# REDIS_ACK_REPLICAS, which is passed through like every writer-svc variable), BENCH_PORT_BASE (28000: redis +379, writer +80), BENCH_DIR
# (.run/bench-writer: logs), and any writer-svc variable (BATCH_SIZE, BATCH_WINDOW, ...), which is
# passed through.
set -euo pipefail

# The writer trusts X-User-ID here and loadgen sends it (wrk's scripts always do): these figures
# measure the engine, and a session token's check would add its own cost to every like. A
# deployment's default (sessions, no trusted header) is measured by the tests, not here.
export TRUST_USER_HEADER=${TRUST_USER_HEADER:-true}
export LIKE_ADDR_RATE=${LIKE_ADDR_RATE:-off} # every like comes from one address here
export NEW_POST_ADDR_RATE=${NEW_POST_ADDR_RATE:-off} # and names every post from there
export READ_ADDR_RATE=${READ_ADDR_RATE:-off} # and reads, with MODE=reads
export LOADGEN_IDENTITY=${LOADGEN_IDENTITY:-header}

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-20s}
DELAY_MS=${DELAY_MS:-0}
POST=${POST:-hot}
BENCH_PORT_BASE=${BENCH_PORT_BASE:-28000}
BENCH_DIR=${BENCH_DIR:-.run/bench-writer}
REDIS_CPUS=${REDIS_CPUS:-1}
WRITER_CPUS=${WRITER_CPUS:-0}
WRK_CPUS=${WRK_CPUS:-0}
REDIS_PORT=$((BENCH_PORT_BASE + 379))
WRITER_PORT=$((BENCH_PORT_BASE + 80))

[[ -x $BIN/writer-svc ]] || { echo "bench-writer: $BIN/writer-svc missing: run make build" >&2; exit 1; }
for c in redis-server redis-cli wrk taskset; do
  command -v "$c" >/dev/null || { echo "bench-writer: $c not found (apt-get install -y redis-server redis-tools wrk util-linux)" >&2; exit 1; }
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

taskset -c "$REDIS_CPUS" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --protected-mode no --daemonize no >"$BENCH_DIR/redis.log" 2>&1 &
pids+=($!)
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
for _ in $(seq 100); do rcli ping >/dev/null 2>&1 && break; sleep 0.1; done
REPLICAS=${REPLICAS:-0}
for i in $(seq "$REPLICAS"); do
  taskset -c "$REDIS_CPUS" redis-server --port $((REDIS_PORT + i)) --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --daemonize no --replicaof 127.0.0.1 "$REDIS_PORT" >"$BENCH_DIR/replica-$i.log" 2>&1 &
  pids+=($!)
done
if ((REPLICAS > 0)); then # until every replica is in sync and acknowledges writes (WAIT)
  for _ in $(seq 100); do
    [[ $(rcli wait "$REPLICAS" 100) -ge $REPLICAS ]] 2>/dev/null && break
    rcli set bench:sync 1 >/dev/null
    sleep 0.1
  done
  [[ $(rcli wait "$REPLICAS" 1000) -ge $REPLICAS ]] || { echo "bench-writer: $REPLICAS replicas did not sync" >&2; exit 1; }
fi
LISTEN_ADDR=127.0.0.1:$WRITER_PORT REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0 LOG_LEVEL=${LOG_LEVEL:-error} \
  taskset -c "$WRITER_CPUS" "$BIN/writer-svc" >"$BENCH_DIR/writer-svc.log" 2>&1 &
writer=$!
pids+=($writer)
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$WRITER_PORT/readyz" 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$WRITER_PORT

info() { rcli info "$1" | tr -d '\r'; }
redis_cpu() { info cpu | awk -F: '$1=="used_cpu_sys"||$1=="used_cpu_user"{s+=$2} END{printf "%.6f", s}'; }
cmd_calls() { info commandstats | awk -F'[:=,]' -v c="cmdstat_$1" '$1==c{n=$3} END{print n+0}'; }

# MODE=reads: GET /count/$POST (liked once first, so that it exists) in a closed loop instead of
# likes, and one line of what a read costs: reads/s, Redis CPU and writer CPU per read, the read
# barriers' WAITs and SETs per read (REDIS_ACK_REPLICAS with REPLICAS), wrk's p50 and p99.
if [[ ${MODE:-likes} == reads ]]; then
  curl -fsS -o /dev/null -X POST -H "X-User-ID: reader-seed" "$url/like/$POST"
  taskset -c "$WRK_CPUS" wrk -t"$THREADS" -c"$CONNS" -d2s "$url/count/$POST" >/dev/null
  r0=$(redis_cpu) a0=$(cmd_calls wait) s0=$(cmd_calls set) w0=$(awk '{print $14+$15}' "/proc/$writer/stat")
  out=$(taskset -c "$WRK_CPUS" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$url/count/$POST")
  r1=$(redis_cpu) a1=$(cmd_calls wait) s1=$(cmd_calls set) w1=$(awk '{print $14+$15}' "/proc/$writer/stat")
  echo "$out" >"$BENCH_DIR/wrk.txt"
  requests=$(echo "$out" | awk '/requests in/{print $1}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  secs=$(echo "$out" | awk '/requests in/{sub(/s,$/, "", $4); print $4}')
  awk -v n="$((requests - ${non2xx:-0}))" -v non2xx="${non2xx:-0}" -v secs="$secs" -v r="$(awk -v a="$r0" -v b="$r1" 'BEGIN{print b-a}')" \
    -v waits="$((a1 - a0))" -v sets="$((s1 - s0))" -v w="$((w1 - w0))" -v hz="$(getconf CLK_TCK)" \
    -v p50="$(echo "$out" | awk '$1=="50%"{print $2}')" -v p99="$(echo "$out" | awk '$1=="99%"{print $2}')" 'BEGIN {
      printf "reads/s %.0f  ok %d  non2xx %d  redis_us %.2f  writer_us %.1f  waits_per_read %.4f  sets_per_read %.4f  p50 %s  p99 %s\n",
        n / secs, n, non2xx, r * 1e6 / n, w / hz * 1e6 / n, waits / n, sets / n, p50, p99
    }'
  exit 0
fi

# Warm up (connections, script cache) on another post, then measure on a fresh one.
taskset -c "$WRK_CPUS" wrk -t"$THREADS" -c"$CONNS" -d2s -s scripts/wrk-likes.lua "$url" -- warmup warm "$DELAY_MS" >/dev/null

evalsha_calls() { info commandstats | awk -F'[:=,]' '$1=="cmdstat_evalsha"{print $3}'; }
writer_ticks() { awk '{print $14+$15}' "/proc/$writer/stat"; }
used_memory() { info memory | awk -F: '$1=="used_memory"{print $2}'; }

m0=$(used_memory)
r0=$(redis_cpu) c0=$(evalsha_calls) w0=$(writer_ticks) u0=$(info commandstats | awk -F'[:=,]' '$1=="cmdstat_evalsha"{print $5}')
out=$(taskset -c "$WRK_CPUS" wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s scripts/wrk-likes.lua "$url" -- "$POST" "run$$" "$DELAY_MS")
r1=$(redis_cpu) c1=$(evalsha_calls) w1=$(writer_ticks) u1=$(info commandstats | awk -F'[:=,]' '$1=="cmdstat_evalsha"{print $5}')
echo "$out" >"$BENCH_DIR/wrk.txt"
info commandstats >"$BENCH_DIR/commandstats.txt"
curl -fsS "$url/metrics" >"$BENCH_DIR/metrics.txt" 2>/dev/null || true # batch sizes, among others
sleep 1 # let the likes in flight when wrk stopped finish before reading the count
stored=$(rcli get "likes:{$POST}:count")
stored=${stored:-0}
m1=$(used_memory)

requests=$(echo "$out" | awk '/requests in/{print $1}')
non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
non2xx=${non2xx:-0}
secs=$(echo "$out" | awk '/requests in/{sub(/s,$/, "", $4); print $4}')
p50=$(echo "$out" | awk '$1=="50%"{print $2}')
p99=$(echo "$out" | awk '$1=="99%"{print $2}')
acked=$((requests - non2xx))
hz=$(getconf CLK_TCK)
awk -v acked="$acked" -v secs="$secs" -v r0="$r0" -v r1="$r1" -v calls="$((c1 - c0))" \
  -v usec="$((u1 - u0))" -v w="$((w1 - w0))" -v hz="$hz" -v p50="$p50" -v p99="$p99" \
  -v non2xx="$non2xx" -v stored="$stored" -v mem="$((m1 - m0))" 'BEGIN {
    r = r1 - r0; missing = acked - stored; if (missing < 0) missing = 0
    unacked = stored - acked; if (unacked < 0) unacked = 0
    printf "likes/s %.0f  acked %d  non2xx %d  redis_us %.2f  per_call %.1f  script_us %.1f  writer_us %.1f  p50 %s  p99 %s  mem_b %.1f  missing %d  unacked %d\n",
      acked / secs, acked, non2xx, r * 1e6 / acked, acked / (calls ? calls : 1), usec / (calls ? calls : 1),
      w / hz * 1e6 / acked, p50, p99, mem / (stored ? stored : 1), missing, unacked
  }'
