#!/usr/bin/env bash
# rooms.sh — Speechwave's table on our engine (docs/BENCHMARKS.md, "Reactions at conference
# scale"): for each ROOM (people:reactions per second; a rate of 0 is the room's ceiling, everyone
# once per REACTION_INTERVAL), scripts/ramp.sh --react with one fanout-svc node on one core
# (FANOUT_CPUS, CPU 0) and Redis, the writer and loadgen on the other, RUNS times. Prints one line
# per run and, per room, the medians: reactions/s acknowledged, node CPU, delivery and convergence,
# latency from a reaction's acknowledgement to the first frame at a viewer that includes it
# (p50/p95/p99), display updates a second per viewer, events a second. Holds
# /tmp/likes-bench.lock throughout, so no other measurement on the machine overlaps.
#
# Usage: scripts/rooms.sh [rooms]     e.g. scripts/rooms.sh 800:0,10000:0
# Environment: RUNS (3), WINDOW (20s), WARMUP (5s), ROOMS_DIR (.run/rooms), and anything
# scripts/ramp.sh takes (DISPLAY_BUDGET, POST_RATE_LIMIT, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOMS=${1:-400:60,400:100,400:125,800:25,800:45,800:60,800:0,10000:0}
RUNS=${RUNS:-3}
WINDOW=${WINDOW:-20s}
WARMUP=${WARMUP:-5s}
OUT=${ROOMS_DIR:-.run/rooms}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "rooms: jq not found: apt-get install -y jq" >&2; exit 1; }
[[ -x bin/loadgen ]] || { echo "rooms: run make build first" >&2; exit 1; }

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
fi

# The figures of one run's only phase, as one line.
row='.phases[0] | [.conns_open, .likes_per_sec, .nodes_cpu_pct, .delivery_pct, .convergence_pct,
  .latency_p50_ms, .latency_p95_ms, .latency_p99_ms, .updates_per_viewer_per_sec, .events_per_sec,
  .like_errors, ((.slo_broken // []) | join("; "))]'
echo "people rate run | open acked/s node-cpu% delivery% converged% p50 p95 p99 upd/s/viewer events/s errors | slo"
for room in ${ROOMS//,/ }; do
  people=${room%%:*} rate=${room#*:}
  for run in $(seq "$RUNS"); do
    dir="$OUT/$people-$rate-$run"
    RAMP_DIR="$dir" FANOUT_NODES=1 scripts/ramp.sh --react --conns "$people" --posts 1 --rate "$rate" \
      --warmup "$WARMUP" --window "$WINDOW" --slo 'p99<=300ms,delivery>=99.9%,converged>=100%,errors=0' \
      --json >"$dir.json" 2>"$dir.log" || { echo "rooms: ramp failed, see $dir.log" >&2; exit 1; }
    echo "$people $rate $run | $(jq -r "$row | map(tostring) | join(\" \")" "$dir.json")"
  done
  # Medians over the runs (the middle one of an odd count).
  jq -rs --arg p "$people" --arg r "$rate" '
    def med(f): map(f) | sort | .[length / 2 | floor];
    map(.phases[0]) | "\($p) \($r) median | open \(med(.conns_open)) acked/s \(med(.likes_per_sec)) " +
      "node CPU \(med(.nodes_cpu_pct) | round)% delivery \(med(.delivery_pct))% converged \(med(.convergence_pct))% " +
      "p50/p95/p99 \(med(.latency_p50_ms)) / \(med(.latency_p95_ms)) / \(med(.latency_p99_ms)) ms " +
      "\(med(.updates_per_viewer_per_sec)) upd/s per viewer, \(med(.events_per_sec) | round) events/s"' \
    $(for run in $(seq "$RUNS"); do echo "$OUT/$people-$rate-$run.json"; done)
done
