#!/usr/bin/env bash
# floor.sh — fanout-svc against the floor, in one run: for each like rate, scripts/ramp.sh with one
# fanout-svc node and then with the floor server in its place (the bare write loop as a process,
# fanout-svc/internal/hub/floor_test.go), RUNS times, alternating, with the same viewers and
# likes. Prints one line per ramp and the medians of the ratios node/floor of CPU per delivered
# event and of p99 latency. Holds /tmp/likes-bench.lock throughout, so no other measurement on the
# machine overlaps.
#
# Usage: scripts/floor.sh [rates]     e.g. scripts/floor.sh 40,80,150  (likes/s; x 1,000 viewers
#                                      per post = events/s)
# Environment: RUNS (3), CONNS (10000: 10 posts x 1,000 viewers), WINDOW (10s), BASE_BIN (another
# fanout-svc binary, e.g. an older build, measured as a third target "base" in each round), and
# anything scripts/ramp.sh takes.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${1:-40,80,150}
RUNS=${RUNS:-3}
CONNS=${CONNS:-10000}
WINDOW=${WINDOW:-10s}
OUT=${FLOOR_DIR:-.run/floor}
mkdir -p "$OUT"
[[ -x bin/fanout-svc ]] || { echo "floor: run make build first" >&2; exit 1; }
go test -c -o "$OUT/hub.test" ./fanout-svc/internal/hub

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
fi

# ramp TARGET RATE RUN: one ramp; prints "target rate run events/s cpu% cpu-us/event p99-ms".
ramp() {
  local dir="$OUT/$1-$2-$3" env=()
  [[ $1 == floor ]] && env=(LIKES_HUB_FLOOR=1 FANOUT_BIN="$OUT/hub.test")
  [[ $1 == base ]] && env=(FANOUT_BIN="$BASE_BIN")
  env "${env[@]}" RAMP_DIR="$dir" FANOUT_NODES=1 scripts/ramp.sh --conns "$CONNS" --rate "$2" \
    --warmup 3s --window "$WINDOW" >"$dir.log" 2>&1 || { echo "floor: ramp failed, see $dir.log" >&2; exit 1; }
  # columns: events_per_sec(10) nodes_cpu_pct(16) events_per_node_cpu_sec(17) latency_p99_ms(14)
  tail -n 1 "$dir/ramp.csv" | awk -F, -v t="$1" -v r="$2" -v n="$3" \
    '{ printf "%s %s %s %d %.0f %.3f %.1f\n", t, r, n, $10, $16, 1e6/$17, $14 }'
}

echo "target rate run events/s cpu% cpu-us/event p99-ms"
results="$OUT/results.txt"
: >"$results"
for rate in ${RATES//,/ }; do
  for run in $(seq "$RUNS"); do
    for target in floor node ${BASE_BIN:+base}; do
      ramp "$target" "$rate" "$run" | tee -a "$results"
    done
  done
done
# Per rate: the median over runs of node/floor, each run's pair measured back to back.
median() { sort -g | awk '{ v[NR]=$1 } END { print v[int((NR+1)/2)] }'; }
echo "rate median-cpu-ratio median-p99-ratio pairs  (node / floor)"
for rate in ${RATES//,/ }; do
  pairs=$(awk -v r="$rate" '$2==r { k=$3; if ($1=="floor") { fc[k]=$6; fp[k]=$7 } else { nc[k]=$6; np[k]=$7 } }
    END { for (k in nc) if (k in fc) printf "%.3f %.3f\n", nc[k]/fc[k], np[k]/fp[k] }' "$results")
  printf '%s %s %s %d\n' "$rate" "$(cut -d' ' -f1 <<<"$pairs" | median)" "$(cut -d' ' -f2 <<<"$pairs" | median)" "$(wc -l <<<"$pairs")"
done
