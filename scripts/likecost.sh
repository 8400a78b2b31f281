#!/usr/bin/env bash
# likecost.sh — what a like costs the generator next to what it costs the writer: a
# like from loadgen must cost at most half the writer's CPU per like, both measured in the same
# run. Starts a throwaway redis-server, one writer-svc (and the one fanout-svc node a ramp needs)
# on 127.0.0.1, then drives the writer twice for the same time at the same concurrency:
#   wrk      wrk -t1 -cCONNS with scripts/wrk-like.lua (fresh users, one post)
#   loadgen  loadgen ramp --conns 0 --posts 1 --writers CONNS: CONNS closed-loop writers over
#            CONNS keep-alive connections, no viewer: what a like costs, as wrk sends it (a
#            viewer would add the node's and its own events to the generator's core)
# and for each prints, over the same measured interval (DURATION seconds, after WARMUP seconds of
# load):
#   likes/s     likes stored (the post's count in Redis; every like is by a fresh user) per second
#   writer_us   writer-svc CPU (/proc/PID/stat utime+stime) per like, in microseconds
#   gen_us      the generator's CPU per like: wrk, or loadgen and its worker processes
#   redis_us    redis-server CPU (INFO cpu, used_cpu_user+used_cpu_sys) per like
#   gen/writer  gen_us / writer_us: the requirement is at most 0.5 for loadgen
#   errors      answers that were not a counted like, over the generator's whole run
#
# CPU layout (taskset): WRITER_CPUS (default 0) for writer-svc alone; GEN_CPUS (1) for
# redis-server, the generator and the fanout node. The machine must be otherwise idle: the load
# average is printed beside the figures (rerun when it is above 1). Holds /tmp/likes-bench.lock
# while it measures, so no other measurement on the machine overlaps.
#
# Usage: scripts/likecost.sh
# Environment (defaults): CONNS (64), DURATION (10: seconds measured), WARMUP (2: seconds of load
# before), BIN (bin), NO_BUILD (unset: runs make build first), LIKECOST_PORT_BASE (29000: redis
# +379, writer +80, fanout +90), LIKECOST_DIR (.run/likecost: logs, wrk output, the ramp's JSON).
set -euo pipefail

# The writer trusts X-User-ID here and loadgen sends it (wrk's scripts always do): these figures
# measure the engine, and a session token's check would add its own cost to every like. A
# deployment's default (sessions, no trusted header) is measured by the tests, not here.
export TRUST_USER_HEADER=${TRUST_USER_HEADER:-true}
export LIKE_ADDR_RATE=${LIKE_ADDR_RATE:-off} # every like comes from one address here
export NEW_POST_ADDR_RATE=${NEW_POST_ADDR_RATE:-off} # and names every post from there
export READ_ADDR_RATE=${READ_ADDR_RATE:-off} # and reads every post's count from there
export LOADGEN_IDENTITY=${LOADGEN_IDENTITY:-header}

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
CONNS=${CONNS:-64}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
WRITER_CPUS=${WRITER_CPUS:-0}
GEN_CPUS=${GEN_CPUS:-1}
PORT_BASE=${LIKECOST_PORT_BASE:-29000}
OUT=${LIKECOST_DIR:-.run/likecost}
REDIS_PORT=$((PORT_BASE + 379))
WRITER_PORT=$((PORT_BASE + 80))
FANOUT_PORT=$((PORT_BASE + 90))
RUN=lc$(date +%s)
HZ=$(getconf CLK_TCK)

say() { echo "likecost: $*" >&2; }
die() { say "$*"; exit 1; }

for c in redis-server redis-cli wrk taskset curl; do
  command -v "$c" >/dev/null || die "$c not found (apt-get install -y redis-server redis-tools wrk util-linux curl)"
done
[[ $(nproc) -ge 2 ]] || die "needs 2 CPUs: the writer on one, Redis and the generator on the other"
if [[ -z ${NO_BUILD:-} ]]; then
  make build BIN="$BIN" >&2 || die "make build failed"
fi
for b in writer-svc fanout-svc loadgen; do [[ -x $BIN/$b ]] || die "$BIN/$b missing: run make build"; done
mkdir -p "$OUT"

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock -w 900 9 || die "another measurement has held /tmp/likes-bench.lock for 15 minutes"
fi

LOG_DIR=$OUT
# shellcheck source=lib/procs.sh
source scripts/lib/procs.sh
for p in "$REDIS_PORT" "$WRITER_PORT" "$FANOUT_PORT"; do
  port_free "$p" || die "port $p is in use: set LIKECOST_PORT_BASE"
done
start_redis "$REDIS_PORT" taskset -c "$GEN_CPUS" || die "redis-server did not start"
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
LISTEN_ADDR=127.0.0.1:$WRITER_PORT REDIS_URL=$REDIS_URL LOG_LEVEL=${LOG_LEVEL:-error} \
  taskset -c "$WRITER_CPUS" "$BIN/writer-svc" >"$OUT/writer-svc.log" 2>&1 &
writer=$!
pids+=($writer)
LISTEN_ADDR=127.0.0.1:$FANOUT_PORT REDIS_URL=$REDIS_URL LOG_LEVEL=${LOG_LEVEL:-error} DRAIN_WINDOW=1s \
  taskset -c "$GEN_CPUS" "$BIN/fanout-svc" >"$OUT/fanout-svc.log" 2>&1 &
pids+=($!)
url=http://127.0.0.1:$WRITER_PORT
wait_http "$url/readyz" writer-svc || die "writer-svc did not start"
wait_http "http://127.0.0.1:$FANOUT_PORT/healthz" fanout-svc || die "fanout-svc did not start"

# ticks PID: CPU clock ticks (utime+stime, all threads) of PID and all its descendants, in one
# pass over the process table. The command name in /proc/PID/stat is cut off first: it may hold
# spaces.
ticks() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      want[root] = 1
      do { grew = 0; for (p in parent) if (!(p in want) && (parent[p] in want)) { want[p] = 1; grew = 1 } } while (grew)
      for (p in want) {
        f = "/proc/" p "/stat"
        if ((getline line < f) > 0) { sub(/.*\) /, "", line); split(line, a, " "); sum += a[12] + a[13] }
        close(f)
      }
      print sum + 0
    }'
}
redis_cpu() { rcli info cpu | tr -d '\r' | awk -F: '$1=="used_cpu_sys"||$1=="used_cpu_user"{s+=$2} END{printf "%.6f", s}'; }
stored() { local n; n=$(rcli get "likes:{$1}:count"); echo "${n:-0}"; }
# sample POST GEN_PID: "seconds stored writer_ticks gen_ticks redis_cpu_seconds" now.
sample() { echo "$(date +%s.%N) $(stored "$1") $(ticks "$writer") $(ticks "$2") $(redis_cpu)"; }

# wait_bounded PID SECONDS: wait for PID to exit, at most SECONDS; then stop it.
wait_bounded() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$1" 2>/dev/null; then
    say "pid $1 still running after $2 s: stopping it"
    kill -TERM "$1" 2>/dev/null || true
  fi
  wait "$1" 2>/dev/null || true
}

# measure NAME POST GEN_PID: waits until GEN_PID's likes reach POST, then WARMUP seconds, and
# samples the interval of DURATION seconds after that.
measure() {
  local name=$1 post=$2 gen=$3 s0 s1
  for _ in $(seq 300); do # up to 30 s for the first like (the ramp reads the node and Redis first)
    [[ $(stored "$post") -gt 0 ]] && break
    kill -0 "$gen" 2>/dev/null || die "$name exited before liking; see $OUT/$name.log"
    sleep 0.1
  done
  [[ $(stored "$post") -gt 0 ]] || die "$name sent no like in 30 s; see $OUT/$name.log"
  sleep "$WARMUP"
  s0=$(sample "$post" "$gen")
  sleep "$DURATION"
  s1=$(sample "$post" "$gen")
  echo "$s0 $s1" >"$OUT/$name.samples"
}

# figures NAME ERRORS: one line of the table from NAME's samples.
figures() {
  awk -v name="$1" -v errors="$2" -v hz="$HZ" '{
    dt = $6 - $1; likes = $7 - $2
    if (likes <= 0) { printf "%-8s no likes stored in the interval\n", name; exit }
    w = ($8 - $3) / hz * 1e6 / likes; g = ($9 - $4) / hz * 1e6 / likes; r = ($10 - $5) * 1e6 / likes
    printf "%-8s %8.0f %10.1f %8.1f %9.1f %11.2f %7s\n", name, likes / dt, w, g, r, g / w, errors
  }' "$OUT/$1.samples"
}

# Warm the writer up (connections, script cache) on a post of its own.
taskset -c "$GEN_CPUS" wrk -t1 -c"$CONNS" -d2s -s scripts/wrk-like.lua "$url" -- "$RUN-warm" "$RUN-warm" >/dev/null

load=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average $load; writer on CPU $WRITER_CPUS; redis, generator and the fanout node on CPU $GEN_CPUS"

run_for=$((WARMUP + DURATION + 2))
taskset -c "$GEN_CPUS" wrk -t1 -c"$CONNS" -d"${run_for}s" -s scripts/wrk-like.lua "$url" -- "$RUN-wrk" "$RUN-wrk" \
  >"$OUT/wrk.log" 2>&1 &
gen=$!
pids+=($gen)
measure wrk "$RUN-wrk" "$gen"
wait_bounded "$gen" 30
wrk_errors=$(awk '/^likes:/{print $4}' "$OUT/wrk.log")

taskset -c "$GEN_CPUS" "$BIN/loadgen" ramp --writer "$url" --fanout "http://127.0.0.1:$FANOUT_PORT" \
  --redis "127.0.0.1:$REDIS_PORT" --conns 0 --posts 1 --writers "$CONNS" --warmup "${WARMUP}s" \
  --window "$((DURATION + 2))s" --post-prefix "$RUN-lg" --json >"$OUT/ramp.json" 2>"$OUT/loadgen.log" &
gen=$!
pids+=($gen)
measure loadgen "$RUN-lg-0" "$gen"
wait_bounded "$gen" 60
# field NAME: a number from the ramp's JSON report (indented, one field a line); - when absent.
field() { awk -F': *' -v k="\"$1\"" '$1 ~ k { gsub(/[ ,]/, "", $2); print $2; found=1; exit } END { if (!found) print "-" }' "$OUT/ramp.json"; }
lg_errors=$(field like_errors)

echo "generator  likes/s  writer_us   gen_us  redis_us  gen/writer  errors   (load average $load, interval ${DURATION}s, $CONNS connections)"
figures wrk "${wrk_errors:--}"
figures loadgen "$lg_errors"
# round NUMBER: to a whole number; - stays -.
round() { awk -v v="$1" 'BEGIN { if (v == "-" || v == "null") print "-"; else printf "%.0f", v }'; }
echo "loadgen's own report of its window: $(round "$(field likes_per_sec)") likes/s, generator CPU" \
  "$(round "$(field generator_cpu_pct)")%, writer CPU $(round "$(field writer_cpu_pct)")%, redis CPU $(round "$(field redis_cpu_pct)")%"
awk -v hz="$HZ" '{ likes = $7 - $2; if (likes > 0) { r = ($9 - $4) / ($8 - $3)
  printf "requirement gen/writer <= 0.5 for loadgen: %s (%.2f)\n", (r <= 0.5 ? "met" : "NOT met"), r } }' "$OUT/loadgen.samples"
