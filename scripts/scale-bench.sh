#!/usr/bin/env bash
# scale-bench.sh — the scale figure, the README's workflow as a benchmark: the compose
# stack with each fanout replica limited to FANOUT_CPU_LIMIT, and `loadgen ramp --until-break` at
# 1, 2 and 4 replicas, ROUNDS times over. It prints each search's capacity and, per replica count,
# the median capacity and its growth over one replica. Run it alone on the machine (it holds
# /tmp/likes-bench.lock); it targets only the stack's own containers.
#
# Environment (defaults): FANOUT_CPU_LIMIT (0.25), FANOUT_MEM_LIMIT (256m), ROUNDS (3),
# REPLICAS ("1 2 4"), RAMP ("--until-break --conns 250 --rate 100 --warmup 2s --window 8s"),
# COMPOSE_PROJECT_NAME (likes-scalebench), OUT (.run/scale-bench: one JSON per search).
# Needs the images that `docker compose up --build` builds (and `make images-offline` where no
# registry answers; its .env selects the stand-ins).
set -euo pipefail
cd "$(dirname "$0")/.."
export FANOUT_CPU_LIMIT=${FANOUT_CPU_LIMIT:-0.25} FANOUT_MEM_LIMIT=${FANOUT_MEM_LIMIT:-256m}
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-likes-scalebench}
export LIKES_PORT=${LIKES_PORT:-28080} STREAMS_PORT=${STREAMS_PORT:-28090} MONITOR_PORT=${MONITOR_PORT:-28404}
ROUNDS=${ROUNDS:-3}
REPLICAS=${REPLICAS:-1 2 4}
RAMP=${RAMP:---until-break --conns 250 --rate 100 --warmup 2s --window 8s}
OUT=${OUT:-.run/scale-bench}
DOCKER=${DOCKER:-docker}
mkdir -p "$OUT"

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock -w 900 9 || { echo "scale-bench: another benchmark holds /tmp/likes-bench.lock" >&2; exit 1; }
fi
trap '"$DOCKER" compose --profile bench down -v --timeout 5 >/dev/null 2>&1 || true' EXIT

echo "scale-bench: FANOUT_CPU_LIMIT=$FANOUT_CPU_LIMIT, $ROUNDS rounds of replicas $REPLICAS; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$DOCKER" compose --profile bench build >/dev/null
"$DOCKER" compose up -d --wait >/dev/null
declare -A caps
for round in $(seq "$ROUNDS"); do
  for n in $REPLICAS; do
    "$DOCKER" compose up -d --wait --scale fanout-svc="$n" >/dev/null
    out="$OUT/round$round-$n.json"
    # shellcheck disable=SC2086 # RAMP is a list of flags
    "$DOCKER" compose --profile bench run --rm --no-deps -T loadgen ramp $RAMP --json >"$out" 2>"$out.log"
    c=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capacity"]; print(c["conns"])' "$out")
    line=$(grep '^capacity:' "$out.log" | tail -1)
    echo "round $round, $n replica(s): $line (load average $(cut -d' ' -f1 /proc/loadavg))"
    caps[$n]="${caps[$n]:-} $c"
  done
done
base=
for n in $REPLICAS; do
  median=$(printf '%s\n' ${caps[$n]} | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  base=${base:-$median}
  echo "$n replica(s): capacities${caps[$n]}, median $median viewers ($(awk -v m="$median" -v b="$base" 'BEGIN {printf "%.2f", m / b}')x one replica)"
done
