#!/usr/bin/env bash
# watching-cost.sh — what the "watching now" numbers cost a node with churn (issue 21 §1), in one
# process where nothing else blurs it: ROUNDS (3) times, scripts/idle.sh with WATCHING_INTERVAL=2s
# and then 0, each with VIEWERS (18000) held and CHURN (1% of them, 180) streams a second joining
# and leaving the same posts. Prints each run's node CPU, then the medians and the difference:
# the feature's cost in % of a core for that many viewers, and per 100,000 viewers.
#
# Usage: scripts/alone.sh scripts/watching-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
export VIEWERS=${VIEWERS:-18000}
export CHURN=${CHURN:-$((VIEWERS / 100))}
export SECONDS_IDLE=${SECONDS_IDLE:-30}
out=${IDLE_DIR:-.run/idle}/watching-cost.txt
mkdir -p "$(dirname "$out")"
: >"$out"
echo "watching round viewers node-cpu%"
for r in $(seq "$ROUNDS"); do
  for w in 2s 0; do
    line=$(WATCHING_INTERVAL=$w scripts/idle.sh | awk '$1 == "result:" { print $3, $5 }')
    echo "$w $r $line" | tee -a "$out"
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
on=$(awk '$1 == "2s" { print $4 }' "$out" | median)
off=$(awk '$1 == "0" { print $4 }' "$out" | median)
viewers=$(awk '{ print $3 }' "$out" | median)
awk -v on="$on" -v off="$off" -v v="$viewers" -v c="$CHURN" 'BEGIN {
  printf "medians: node CPU %.3f%% with watching (2s), %.3f%% without, at %d viewers and %d joins and leaves a second\n", on, off, v, c
  printf "watching costs %.3f%% of a core here: %.3f%% per 100,000 viewers with 1%% churn\n", on - off, (on - off) * 100000 / v }'
