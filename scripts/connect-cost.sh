#!/usr/bin/env bash
# connect-cost.sh — what a viewer's connect costs a node against the floor: the
# hub's BenchmarkBareConnect (Go's net: accept, read the head, one write, keep the socket) and
# fanout-svc's BenchmarkConnect (the whole node as run builds it, watching on, a real
# redis-server, a Known post), alternated RUNS times at each number of viewers already held.
# Each benchmark process runs on CPU 0 (one core: one shard, as each of hundredk.sh's nodes), the
# client ends in its child on CPU 1. Prints every run's CPU per connect, then the medians and
# node / floor.
#
# Usage: scripts/alone.sh scripts/connect-cost.sh
# Environment (defaults): RUNS (3), HELD ("1000 10000"), CONNECTS (8000 a run), OUT
# (.run/connect-cost).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
HELD=${HELD:-1000 10000}
CONNECTS=${CONNECTS:-8000}
OUT=${OUT:-.run/connect-cost}
mkdir -p "$OUT"
go test -c -o "$OUT/hub.test" ./fanout-svc/internal/hub/
go test -c -o "$OUT/fanout.test" ./fanout-svc/
export LIKES_CONNECTTEST_CPU=1

# cost BINARY BENCH: one run's cpu-µs/connect.
cost() {
  taskset -c 0 "$1" -test.run '^$' -test.bench "$2" -test.benchtime "${CONNECTS}x" |
    awk '/cpu-µs\/connect/ { for (i = 1; i < NF; i++) if ($(i + 1) == "cpu-µs/connect") print $i }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$OUT/runs.txt"
for r in $(seq "$RUNS"); do
  for n in $HELD; do
    b=$(cost "$OUT/hub.test" "BareConnect/viewers=$n\$")
    f=$(cost "$OUT/fanout.test" "^BenchmarkConnect/viewers=$n\$")
    echo "run $r viewers $n floor $b node $f" | tee -a "$OUT/runs.txt"
  done
done
for n in $HELD; do
  b=$(awk -v n="$n" '$4 == n { print $6 }' "$OUT/runs.txt" | median)
  f=$(awk -v n="$n" '$4 == n { print $8 }' "$OUT/runs.txt" | median)
  awk -v n="$n" -v b="$b" -v f="$f" 'BEGIN { printf "viewers %d: floor %.1f µs, node %.1f µs per connect (medians of runs): node / floor %.2fx\n", n, b, f, f / b }'
done
