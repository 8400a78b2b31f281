#!/usr/bin/env bash
# hundredk.sh — a node at 100,000 viewers (issue 21), as an operator sizing one would measure it:
# NODES (6) fanout-svc processes share CPU 0, since a process here may hold 20,000 open files;
# redis-server, writer-svc and loadgen (its epoll workers, 15,000 viewers each, from source
# addresses spread over 127.0.0.0/8) share CPU 1. 10 posts x 10,000 viewers. Each ramp connects
# the viewers (the connect ramp: node CPU per connect, idle memory per viewer), then likes at one
# RATE for the window (1 like/s on a post of 10,000 viewers is 10,000 events/s: 2 and 5 likes/s are
# 20K and 50K events/s). Beside each ramp, `loadgen churn` opens CHURN streams a second on the same
# posts, each held CHURN_HOLD: as many viewers join and leave every second (1% of 100,000 at 1,000),
# so that the watching numbers change as on a live site.
#
# For each of RUNS rounds it runs every RATE with watching on (WATCHING_INTERVAL 2s, the default)
# and off (0), alternating, and prints one line per ramp, then the medians per setting and rate,
# and the watching feature's share of the nodes' CPU (on - off) / on. Holds /tmp/likes-bench.lock
# throughout (or runs under scripts/alone.sh).
#
# Usage: scripts/hundredk.sh                    e.g. RUNS=1 RATES=2 scripts/alone.sh scripts/hundredk.sh
# Environment (defaults): RUNS (3), RATES (2,5), CONNS (100000), POSTS (10), NODES (6), CHURN (1000),
# CHURN_HOLD (1s), WINDOW (20s), SETTINGS ("2s 0": the WATCHING_INTERVAL values), HK_DIR
# (.run/hundredk), and anything scripts/ramp.sh takes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
RATES=${RATES:-2,5}
CONNS=${CONNS:-100000}
POSTS=${POSTS:-10}
NODES=${NODES:-6}
CHURN=${CHURN:-1000}
CHURN_HOLD=${CHURN_HOLD:-1s}
WINDOW=${WINDOW:-20s}
SETTINGS=${SETTINGS:-2s 0}
OUT=${HK_DIR:-.run/hundredk}
PORT_BASE=${RAMP_PORT_BASE:-27000}
mkdir -p "$OUT"
for b in writer-svc fanout-svc loadgen; do
  [[ -x bin/$b ]] || { echo "hundredk: bin/$b missing: run make build first" >&2; exit 1; }
done

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
  export LIKES_BENCH_LOCK_HELD=1
fi

nodes=()
for i in $(seq 0 $((NODES - 1))); do nodes+=("http://127.0.0.1:$((PORT_BASE + 90 + i))"); done
node_list=$(IFS=,; echo "${nodes[*]}")

# churn PREFIX LOG: loadgen churn on CPU 1 against the ramp's nodes and posts, from once they
# answer until killed.
churn() {
  for url in "${nodes[@]}"; do
    until curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; do sleep 0.5; done
  done
  exec taskset -c 1 bin/loadgen churn --fanout "$node_list" --rate "$CHURN" --hold "$CHURN_HOLD" \
    --duration 1h --posts "$POSTS" --post-prefix "$1" >"$2" 2>&1
}

# ramp SETTING RATE RUN: one ramp; prints its line (see the header below).
ramp() {
  local tag="w$1-r$2-n$3" prefix dir churn_pid=""
  dir="$OUT/$tag"
  prefix="hk$(date +%s)$3"
  mkdir -p "$dir"
  if [[ $CHURN != 0 ]]; then
    churn "$prefix-" "$dir/churn.log" &
    churn_pid=$!
  fi
  WATCHING_INTERVAL=$1 FANOUT_NODES=$NODES RAMP_DIR="$dir" LOADGEN_POST_PREFIX="$prefix" \
    LOADGEN_SOURCES=${LOADGEN_SOURCES:-127.0.0.2-127.0.0.250} LOADGEN_PER_WORKER=${LOADGEN_PER_WORKER:-15000} \
    scripts/ramp.sh --conns "$CONNS" --posts "$POSTS" --rate "$2" --warmup 3s --window "$WINDOW" \
    >"$dir/ramp.log" 2>&1 || { echo "hundredk: ramp $tag failed, see $dir/ramp.log" >&2; [[ -n $churn_pid ]] && kill "$churn_pid"; exit 1; }
  [[ -n $churn_pid ]] && { kill "$churn_pid" 2>/dev/null || true; wait "$churn_pid" 2>/dev/null || true; }
  # The figures by column name, from the ramp's CSV (loadgen/internal/report/columns.go).
  awk -F, -v tag="$1 $2 $3" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { printf "%s %s %s %s %s %s %s %s %s %s\n", tag, $col["conns_open"], $col["connect_ms"],
        $col["connect_node_cpu_us"], $col["mem_per_conn_idle_kib"], $col["events_per_sec"],
        $col["delivery_pct"], $col["latency_p99_ms"], $col["nodes_cpu_pct"],
        ($col["events_per_node_cpu_sec"] > 0 ? sprintf("%.2f", 1e6 / $col["events_per_node_cpu_sec"]) : "-") }
  ' "$dir/ramp.csv"
}

header="watching rate run open connect-ms connect-node-cpu-us idle-kib/conn events/s deliv% p99-ms nodes-cpu% cpu-us/event"
echo "$header"
results="$OUT/results.txt"
: >"$results"
for run in $(seq "$RUNS"); do
  for rate in ${RATES//,/ }; do
    for setting in $SETTINGS; do
      ramp "$setting" "$rate" "$run" | tee -a "$results"
    done
  done
done

# Medians per setting and rate, then the watching share of the nodes' CPU per rate.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
echo
echo "medians: watching rate connect-node-cpu-us idle-kib/conn deliv% p99-ms nodes-cpu% cpu-us/event"
for rate in ${RATES//,/ }; do
  for setting in $SETTINGS; do
    line="$setting $rate"
    for c in 6 7 9 10 11 12; do
      line+=" $(awk -v s="$setting" -v r="$rate" -v c="$c" '$1 == s && $2 == r { print $c }' "$results" | median)"
    done
    echo "$line"
  done
done
for rate in ${RATES//,/ }; do
  on=$(awk -v r="$rate" '$1 == "2s" && $2 == r { print $11 }' "$results" | median)
  off=$(awk -v r="$rate" '$1 == "0" && $2 == r { print $11 }' "$results" | median)
  awk -v r="$rate" -v on="$on" -v off="$off" \
    'BEGIN { if (on > 0) printf "watching share of the nodes CPU at %s likes/s: %.1f%% (on %s%%, off %s%%)\n", r, (on - off) / on * 100, on, off }'
done
