#!/usr/bin/env bash
# soak.sh — the long run behind `make soak` (not part of CI): one fanout node at about half its
# measured capacity for SOAK_DURATION (10m) with SOAK_VIEWERS (10,000) steady viewers from loadgen,
# plus viewer churn: SOAK_CHURN (100) extra streams opened per second, each held for about a second
# and dropped, as phones on a flaky network do. It samples the node's /metrics every 10 s and
# prints the slope of resident memory and goroutines (flat = no leak), then loadgen's table
# (delivery, convergence after the writes stop, errors).
#
# Usage: scripts/soak.sh            (make soak builds bin/ first)
# Environment (defaults): SOAK_DURATION (10m), SOAK_VIEWERS (10000), SOAK_RATE (30 likes/s over 10
# posts = 30,000 events/s, half of the ~60,000 events/s one node delivered on one core here, see
# docs/BENCHMARKS.md), SOAK_CHURN (100/s), SOAK_PORT_BASE (29000), BIN (bin), SOAK_DIR (.run/soak).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
SOAK_DURATION=${SOAK_DURATION:-10m}
SOAK_VIEWERS=${SOAK_VIEWERS:-10000}
SOAK_RATE=${SOAK_RATE:-30}
SOAK_CHURN=${SOAK_CHURN:-100}
SOAK_PORT_BASE=${SOAK_PORT_BASE:-29000}
SOAK_DIR=${SOAK_DIR:-.run/soak}
FANOUT_PORT=$((SOAK_PORT_BASE + 90))
mkdir -p "$SOAK_DIR"
: >"$SOAK_DIR/metrics.tsv"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Samples the node's resident memory, goroutines and viewers every 10 s while the soak runs.
sample() {
  local t0=$SECONDS
  while sleep 10; do
    curl -s --max-time 2 "http://127.0.0.1:$FANOUT_PORT/metrics" | awk -v t=$((SECONDS - t0)) '
      /^process_resident_memory_bytes / {rss=$2}
      /^go_goroutines / {g=$2}
      /^likes_fanout_viewers / {v=$2}
      END {if (rss != "") printf "%d\t%.0f\t%d\t%d\n", t, rss, g, v}' >>"$SOAK_DIR/metrics.tsv" || true
  done
}

secs=$(awk -v d="$SOAK_DURATION" 'BEGIN{n=d+0; u=substr(d,length(d)); print (u=="m") ? n*60 : (u=="h") ? n*3600 : n}')
sample &
pids+=($!)
# Churn: SOAK_CHURN short-lived streams per second (loadgen churn), beside the ramp's steady viewers,
# on the generator's CPU.
gen_pin=()
command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]] && gen_pin=(taskset -c "${GEN_CPUS:-1}")
(sleep 15 && "${gen_pin[@]}" "$BIN/loadgen" churn --fanout "http://127.0.0.1:$FANOUT_PORT" --rate "$SOAK_CHURN" \
  --hold 1s --duration "$((secs - 10))s" >"$SOAK_DIR/churn.json") &
pids+=($!)

FANOUT_NODES=1 RAMP_PORT_BASE=$SOAK_PORT_BASE RAMP_DIR=$SOAK_DIR BIN=$BIN \
  scripts/ramp.sh --conns "$SOAK_VIEWERS" --rate "$SOAK_RATE" --warmup 5s --window "$SOAK_DURATION" |
  tee "$SOAK_DIR/ramp.txt"

# Least-squares slope of RSS (MiB per minute) and goroutines (per minute) over the samples.
echo
echo "soak: node samples (seconds, RSS bytes, goroutines, viewers) in $SOAK_DIR/metrics.tsv"
echo "soak: churn streams (opened / refused / failed): $(cat "$SOAK_DIR/churn.json" 2>/dev/null)"
awk -F'\t' 'NF==4 {n++; sx+=$1; sy+=$2; sg+=$3; sxx+=$1*$1; sxy+=$1*$2; sxg+=$1*$3; if (n==1) first=$2; last=$2}
  END {
    if (n < 3) {print "soak: too few samples"; exit}
    d = n*sxx - sx*sx
    printf "soak: RSS %.1f -> %.1f MiB, slope %.3f MiB/min; goroutines slope %.2f /min (%d samples)\n",
      first/1048576, last/1048576, (n*sxy - sx*sy)/d*60/1048576, (n*sxg - sx*sg)/d*60, n
  }' "$SOAK_DIR/metrics.tsv"
