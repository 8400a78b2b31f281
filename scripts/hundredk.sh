#!/usr/bin/env bash
# hundredk.sh — a node at 100,000 viewers, as an operator sizing one would measure it:
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
# TARGETS puts Nchan beside fanout-svc in the same rounds: for each rate, every
# fanout setting, then Nchan (scripts/ramp.sh RAMP_TARGET=nchan: one nginx with NODES workers on
# CPU 0, its bridge and exporter on CPU 1 with the generator), with the same flags and churn.
# Nchan has no watching: its rows run once per rate, with watching "-".
#
# STORM=1 runs node-loss rounds instead: fanout-svc at watching 2s, RATES' first
# rate, and KILL_AFTER (2s) into a WINDOW of 10s `kill -9` of the last node (so the stayers'
# p99 is mostly the storm's); its viewers reconnect at
# once to the others (loadgen ramp --kill-cmd). CONNS defaults to 96,000 then (16,000 a node):
# at 100,000 the five survivors would need 20,000 viewers each, above the MAX_CONNS (19,744) that
# a 20,000 open-file cap leaves, so ~1,280 would be refused however fast the nodes are. One line
# per round: viewers moved, admitted, refused, failed, ms until every moved viewer was current,
# delivery, the stayers' p99, the nodes' CPU.
#
# Usage: scripts/hundredk.sh                    e.g. RUNS=1 RATES=2 scripts/alone.sh scripts/hundredk.sh
# Environment (defaults): RUNS (3), RATES (2,5), CONNS (100000), POSTS (10), NODES (6), CHURN (1000),
# CHURN_HOLD (1s), WINDOW (20s), SETTINGS ("2s 0": the WATCHING_INTERVAL values), TARGETS ("fanout
# nchan" when nginx and its Nchan module are installed, else "fanout"), HK_DIR (.run/hundredk),
# and anything scripts/ramp.sh takes.
set -euo pipefail

# The writer trusts X-User-ID here and loadgen sends it (wrk's scripts always do): these figures
# measure the engine, and a session token's check would add its own cost to every like. A
# deployment's default (sessions, no trusted header) is measured by the tests, not here.
export TRUST_USER_HEADER=${TRUST_USER_HEADER:-true}
export LIKE_ADDR_RATE=${LIKE_ADDR_RATE:-off} # every like comes from one address here
export NEW_POST_ADDR_RATE=${NEW_POST_ADDR_RATE:-off} # and names every post from there
export READ_ADDR_RATE=${READ_ADDR_RATE:-off} # and reads every post's count from there
export LOADGEN_IDENTITY=${LOADGEN_IDENTITY:-header}
# 5,000 new viewers a second, not ramp.sh's 8,000: at 8,000 the generator core (Redis, the
# writer, seven loadgen workers) saturated in some ramps, and the writer's count read after the
# connect ramp timed out (503) while thousands of viewers timed out connecting. The CPU per
# connect on the nodes is what the ramps compare, and it does not depend on the rate.
export LOADGEN_MAX_CONNECT_RATE=${LOADGEN_MAX_CONNECT_RATE:-5000}
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
RATES=${RATES:-2,5}
STORM=${STORM:-0}
KILL_AFTER=${KILL_AFTER:-2s}
if [[ $STORM == 1 ]]; then CONNS=${CONNS:-96000} WINDOW=${WINDOW:-10s}; else CONNS=${CONNS:-100000}; fi
POSTS=${POSTS:-10}
NODES=${NODES:-6}
CHURN=${CHURN:-1000}
CHURN_HOLD=${CHURN_HOLD:-1s}
WINDOW=${WINDOW:-20s}
SETTINGS=${SETTINGS:-2s 0}
OUT=${HK_DIR:-.run/hundredk}
PORT_BASE=${RAMP_PORT_BASE:-27000}
if command -v nginx >/dev/null && [[ -f ${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so} ]]; then
  TARGETS=${TARGETS:-fanout nchan}
else
  TARGETS=${TARGETS:-fanout}
fi
mkdir -p "$OUT"
for b in writer-svc fanout-svc loadgen; do
  [[ -x bin/$b ]] || { echo "hundredk: bin/$b missing: run make build first" >&2; exit 1; }
done

if [[ -z ${LIKES_BENCH_LOCK_HELD:-} ]]; then # scripts/alone.sh holds it already
  exec 9>/tmp/likes-bench.lock
  flock 9
  export LIKES_BENCH_LOCK_HELD=1
fi

# The nodes' URLs per target: NODES fanout-svc processes, or the one nginx (ramp.sh puts it on
# the first node's port).
fanout_nodes=()
for i in $(seq 0 $((NODES - 1))); do fanout_nodes+=("http://127.0.0.1:$((PORT_BASE + 90 + i))"); done
nchan_nodes=("http://127.0.0.1:$((PORT_BASE + 90))")

# quiet_sockets: the earlier ramps' sockets out of TIME_WAIT first.
# shellcheck source=lib/sockets.sh
source scripts/lib/sockets.sh

# churn PREFIX LOG URL...: loadgen churn on CPU 1 against the ramp's nodes and posts, from once
# they answer until killed.
churn() {
  local prefix=$1 log=$2 list
  shift 2
  for url in "$@"; do
    until curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; do sleep 0.5; done
  done
  list=$(IFS=,; echo "$*")
  exec taskset -c 1 bin/loadgen churn --fanout "$list" --rate "$CHURN" --hold "$CHURN_HOLD" \
    --duration 1h --posts "$POSTS" --post-prefix "$prefix" >"$log" 2>&1
}

# ramp TARGET SETTING RATE RUN: one ramp; prints its line (see the header below). SETTING is the
# WATCHING_INTERVAL for fanout, "-" for nchan.
ramp() {
  local target=$1 tag prefix dir churn_pid="" urls
  shift
  if [[ $target == nchan ]]; then tag="nchan-r$2-n$3"; urls=("${nchan_nodes[@]}"); else tag="w$1-r$2-n$3"; urls=("${fanout_nodes[@]}"); fi
  dir="$OUT/$tag"
  prefix="hk$(date +%s)$3"
  mkdir -p "$dir"
  quiet_sockets
  if [[ $CHURN != 0 ]]; then
    churn "$prefix-" "$dir/churn.log" "${urls[@]}" &
    churn_pid=$!
  fi
  RAMP_TARGET=$target WATCHING_INTERVAL=${1/#-/0} FANOUT_NODES=$NODES RAMP_DIR="$dir" LOADGEN_POST_PREFIX="$prefix" \
    LOADGEN_SOURCES=${LOADGEN_SOURCES:-127.0.0.2-127.0.0.250} LOADGEN_PER_WORKER=${LOADGEN_PER_WORKER:-15000} \
    scripts/ramp.sh --conns "$CONNS" --posts "$POSTS" --rate "$2" --warmup 3s --window "$WINDOW" \
    >"$dir/ramp.log" 2>&1 || { echo "hundredk: ramp $tag failed, see $dir/ramp.log" >&2; [[ -n $churn_pid ]] && kill "$churn_pid"; exit 1; }
  [[ -n $churn_pid ]] && { kill "$churn_pid" 2>/dev/null || true; wait "$churn_pid" 2>/dev/null || true; }
  # The figures by column name, from the ramp's CSV (loadgen/internal/report/columns.go).
  awk -F, -v tag="$target $1 $2 $3" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { printf "%s %s %s %s %s %s %s %s %s %s\n", tag, $col["conns_open"], $col["connect_ms"],
        $col["connect_node_cpu_us"], $col["mem_per_conn_idle_kib"], $col["events_per_sec"],
        $col["delivery_pct"], $col["latency_p99_ms"], $col["nodes_cpu_pct"],
        ($col["events_per_node_cpu_sec"] > 0 ? sprintf("%.2f", 1e6 / $col["events_per_node_cpu_sec"]) : "-") }
  ' "$dir/ramp.csv"
}

# storm RATE RUN: one node-loss round (STORM=1); prints its line.
storm() {
  local tag="storm-r$1-n$2" dir prefix churn_pid="" victim=$((NODES - 1))
  dir="$OUT/$tag"
  prefix="hk$(date +%s)$2"
  mkdir -p "$dir"
  rm -f "$dir"/fanout-*.pid
  if [[ $CHURN != 0 ]]; then
    churn "$prefix-" "$dir/churn.log" "${fanout_nodes[@]}" &
    churn_pid=$!
  fi
  WATCHING_INTERVAL=2s FANOUT_NODES=$NODES RAMP_DIR="$dir" LOADGEN_POST_PREFIX="$prefix" \
    LOADGEN_SOURCES=${LOADGEN_SOURCES:-127.0.0.2-127.0.0.250} LOADGEN_PER_WORKER=${LOADGEN_PER_WORKER:-15000} \
    scripts/ramp.sh --conns "$CONNS" --posts "$POSTS" --rate "$1" --warmup 3s --window "$WINDOW" \
    --kill-cmd "kill -9 \$(cat $dir/fanout-$victim.pid)" --kill-after "$KILL_AFTER" --json \
    >"$dir/ramp.json" 2>"$dir/ramp.log" || { echo "hundredk: storm $tag failed, see $dir/ramp.log" >&2; [[ -n $churn_pid ]] && kill "$churn_pid"; exit 1; }
  [[ -n $churn_pid ]] && { kill "$churn_pid" 2>/dev/null || true; wait "$churn_pid" 2>/dev/null || true; }
  jq -r --arg tag "storm 2s $1 $2" '.phases[0] | [$tag, .conns_open, .storm.moved, .storm.admitted, .storm.refused,
      .storm.failed, (.storm.current_ms // "-"), .delivery_pct, .latency_p99_ms, (.nodes_cpu_pct // "-")] | map(tostring) | join(" ")' "$dir/ramp.json"
}

if [[ $STORM == 1 ]]; then
  command -v jq >/dev/null || { echo "hundredk: STORM=1 reads the ramp's JSON with jq: apt-get install -y jq" >&2; exit 1; }
  echo "target watching rate run open moved admitted refused failed current-ms deliv% stayers-p99-ms nodes-cpu%"
  rate=${RATES%%,*}
  for run in $(seq "$RUNS"); do
    quiet_sockets
    storm "$rate" "$run" | tee -a "$OUT/storm.txt"
  done
  exit 0
fi

header="target watching rate run open connect-ms connect-node-cpu-us idle-kib/conn events/s deliv% p99-ms nodes-cpu% cpu-us/event"
echo "$header"
results="$OUT/results.txt"
: >"$results"
for run in $(seq "$RUNS"); do
  for rate in ${RATES//,/ }; do
    for target in $TARGETS; do
      if [[ $target == nchan ]]; then
        ramp nchan - "$rate" "$run" | tee -a "$results"
        continue
      fi
      for setting in $SETTINGS; do
        ramp fanout "$setting" "$rate" "$run" | tee -a "$results"
      done
    done
  done
done

# Medians per setting and rate, then the watching share of the nodes' CPU per rate.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
echo
echo "medians: target watching rate connect-node-cpu-us idle-kib/conn deliv% p99-ms nodes-cpu% cpu-us/event"
# med TARGET SETTING RATE COLUMN: the median of a column over the runs.
med() { awk -v t="$1" -v s="$2" -v r="$3" -v c="$4" '$1 == t && $2 == s && $3 == r { print $c }' "$results" | median; }
for rate in ${RATES//,/ }; do
  for target in $TARGETS; do
    settings=$SETTINGS
    [[ $target == nchan ]] && settings=-
    for setting in $settings; do
      line="$target $setting $rate"
      for c in 7 8 10 11 12 13; do line+=" $(med "$target" "$setting" "$rate" "$c")"; done
      echo "$line"
    done
  done
done
# fanout-svc (watching at its default, the first SETTING) against Nchan: the target is that
# fanout-svc's CPU per event, p99 and connect cost be at most Nchan's.
if [[ " $TARGETS " == *" nchan "* && " $TARGETS " == *" fanout "* ]]; then
  first=${SETTINGS%% *}
  for rate in ${RATES//,/ }; do
    awk -v r="$rate" -v s="$first" -v fc="$(med fanout "$first" "$rate" 13)" -v nc="$(med nchan - "$rate" 13)" \
      -v fp="$(med fanout "$first" "$rate" 11)" -v np="$(med nchan - "$rate" 11)" \
      -v fk="$(med fanout "$first" "$rate" 7)" -v nk="$(med nchan - "$rate" 7)" '
      function cmp(f, n) { return (f == "-" || n == "-") ? "?" : (f + 0 <= n + 0 ? "yes" : "NO") }
      BEGIN { printf "fanout (watching %s) vs nchan at %s likes/s: cpu-us/event %s vs %s (at most: %s), p99-ms %s vs %s (%s), connect-node-cpu-us %s vs %s (%s)\n",
        s, r, fc, nc, cmp(fc, nc), fp, np, cmp(fp, np), fk, nk, cmp(fk, nk) }'
  done
fi
for rate in ${RATES//,/ }; do
  [[ " $TARGETS " == *" fanout "* ]] || break
  on=$(med fanout 2s "$rate" 12)
  off=$(med fanout 0 "$rate" 12)
  awk -v r="$rate" -v on="$on" -v off="$off" \
    'BEGIN { if (on > 0) printf "watching share of the nodes CPU at %s likes/s: %.1f%% (on %s%%, off %s%%)\n", r, (on - off) / on * 100, on, off }'
done
