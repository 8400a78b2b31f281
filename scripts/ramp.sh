#!/usr/bin/env bash
# ramp.sh — the local benchmark behind `make ramp`: starts redis-server, one writer-svc and
# FANOUT_NODES fanout-svc nodes as local processes on 127.0.0.1, runs `loadgen ramp` against them,
# prints the table and stops everything it started (also on Ctrl-C or failure).
#
# CPU layout (when taskset exists and the machine has at least 2 CPUs):
#   FANOUT_CPUS (default CPU 0)  every fanout-svc node: the system under test gets a core of its own
#   GEN_CPUS    (default CPU 1)  redis-server, writer-svc and loadgen (coordinator and its workers)
#   WRITER_CPUS, REDIS_CPUS (default GEN_CPUS)  to give writer-svc or redis-server a CPU of their own
#   GEN_NICE, REDIS_NICE, WRITER_NICE (unset: none)  nice values for loadgen, redis-server and
#     writer-svc where they share a CPU: with tens of loadgen workers runnable at once (a million
#     viewers), Redis left at the same priority answered the nodes' probes too late and they
#     refused new streams (scripts/million.sh sets them)
# so the generator never takes CPU from the nodes it measures; loadgen reports its own CPU and the
# busy share of GEN_CPUS, and warns when they near saturation.
#
# Usage: scripts/ramp.sh [loadgen ramp flags...]      e.g. scripts/ramp.sh --conns 2000,20000 --rate 50
#        scripts/ramp.sh --writers 500                  the closed loop of the original benchmark
# Environment (defaults): FANOUT_NODES (4), FANOUT_CPUS (0), GEN_CPUS (1), RAMP_PORT_BASE (27000:
# redis +379, writer +80, fanout +90..), BIN (bin), FANOUT_BIN (the node's binary, default
# $BIN/fanout-svc; the floor server of docs/BENCHMARKS.md runs in its place), RAMP_DIR (.run/ramp:
# logs, reports, and fanout-N.pid: node N's process id, for a --kill-cmd), and any
# LOADGEN_* variable (see `loadgen ramp --help`) or fanout-svc variable (FLUSH_WINDOW,
# POST_RATE_LIMIT, MAX_CONNS, ...), which are passed through.
# RAMP_TARGET (fanout): nchan runs Nchan in place of the fanout-svc nodes (docs/BENCHMARKS.md,
# "fanout-svc beside Nchan at 100,000 viewers"): one nginx from scripts/nchan/nginx.conf with
# FANOUT_NODES workers on FANOUT_CPUS (its port is the first node's, +90; the publisher +88, the exporter +87), and on
# GEN_CPUS `loadgen nchan-bridge` (the writer's Redis PUBLISHes to Nchan's publisher) and
# `loadgen procmetrics` (nginx's CPU and memory from /proc, proxied as the node's /metrics).
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
FANOUT_NODES=${FANOUT_NODES:-4}
FANOUT_CPUS=${FANOUT_CPUS:-0}
GEN_CPUS=${GEN_CPUS:-1}
RAMP_PORT_BASE=${RAMP_PORT_BASE:-27000}
RAMP_DIR=${RAMP_DIR:-.run/ramp}
REDIS_PORT=$((RAMP_PORT_BASE + 379))
WRITER_PORT=$((RAMP_PORT_BASE + 80))
FANOUT_PORT=$((RAMP_PORT_BASE + 90))
RAMP_TARGET=${RAMP_TARGET:-fanout}
NCHAN_PUB_PORT=$((RAMP_PORT_BASE + 88))
NCHAN_EXPORTER_PORT=$((RAMP_PORT_BASE + 87))
NCHAN_MODULE=${NCHAN_MODULE:-/usr/lib/nginx/modules/ngx_nchan_module.so}
case $RAMP_TARGET in
  fanout) node_ports=$(seq "$FANOUT_PORT" $((FANOUT_PORT + FANOUT_NODES - 1))) ;;
  nchan)
    command -v nginx >/dev/null && [[ -f $NCHAN_MODULE ]] ||
      { echo "ramp: RAMP_TARGET=nchan needs nginx and $NCHAN_MODULE: apt-get install -y nginx libnginx-mod-nchan" >&2; exit 1; }
    node_ports="$FANOUT_PORT $NCHAN_PUB_PORT $NCHAN_EXPORTER_PORT" ;;
  *) echo "ramp: RAMP_TARGET $RAMP_TARGET: want fanout or nchan" >&2; exit 1 ;;
esac

# The ramp sized for this 2-core machine, as environment defaults so that both LOADGEN_* variables
# and flags override it: 4 phases up to 64K viewers (16K per node, under the 20K open-file limit of
# a node), 10 posts, a fixed like rate that the nodes' single core delivers at the small phases and
# cannot at the large ones, so the table shows where delivery degrades.
export LOADGEN_CONNS=${LOADGEN_CONNS:-2000,10000,20000,64000}
export LOADGEN_POSTS=${LOADGEN_POSTS:-10}
# --writers on the command line asks for the closed loop, which a default --rate would override.
closed_loop=0
for a in "$@"; do case $a in --writers|--writers=*|-writers|-writers=*) closed_loop=1 ;; esac; done
for a in "$@"; do case $a in --rate|--rate=*|-rate|-rate=*) closed_loop=0 ;; esac; done
if [[ $closed_loop == 1 ]]; then export LOADGEN_RATE=${LOADGEN_RATE:-0}; fi
export LOADGEN_RATE=${LOADGEN_RATE:-50}
export LOADGEN_WARMUP=${LOADGEN_WARMUP:-3s}
export LOADGEN_WINDOW=${LOADGEN_WINDOW:-15s}
export LOADGEN_SOURCES=${LOADGEN_SOURCES:-127.0.0.2-127.0.0.40}
export LOADGEN_MAX_CONNECT_RATE=${LOADGEN_MAX_CONNECT_RATE:-8000}

for b in writer-svc fanout-svc loadgen; do
  [[ -x $BIN/$b ]] || { echo "ramp: $BIN/$b missing: run make build (make ramp does)" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "ramp: redis-server not found: apt-get install -y redis-server" >&2; exit 1; }

mkdir -p "$RAMP_DIR"
pins_gen=() pins_fanout=() pins_writer=() pins_redis=()
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
  pins_gen=(taskset -c "$GEN_CPUS")
  pins_fanout=(taskset -c "$FANOUT_CPUS")
  pins_writer=(taskset -c "${WRITER_CPUS:-$GEN_CPUS}")
  pins_redis=(taskset -c "${REDIS_CPUS:-$GEN_CPUS}")
  [[ -z ${GEN_NICE:-} ]] || pins_gen=(nice -n "$GEN_NICE" "${pins_gen[@]}")
  [[ -z ${WRITER_NICE:-} ]] || pins_writer=(nice -n "$WRITER_NICE" "${pins_writer[@]}")
  [[ -z ${REDIS_NICE:-} ]] || pins_redis=(nice -n "$REDIS_NICE" "${pins_redis[@]}")
  echo "ramp: fanout nodes on CPU $FANOUT_CPUS; redis, writer and loadgen on CPU $GEN_CPUS" >&2
else
  echo "ramp: no taskset or a single CPU: processes are not pinned" >&2
fi

LOG_DIR=$RAMP_DIR
# shellcheck source=lib/procs.sh
source scripts/lib/procs.sh
for p in "$REDIS_PORT" "$WRITER_PORT" $node_ports; do
  port_free "$p" || { echo "ramp: port $p is in use: set RAMP_PORT_BASE" >&2; exit 1; }
done
start_redis "$REDIS_PORT" "${pins_redis[@]}" || exit 1
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
# The ramp reports the CPU Redis used in each window (INFO cpu): what a feature costs Redis is the
# difference between a run with it and one without (e.g. WATCHING_INTERVAL=0).
export LOADGEN_REDIS=${LOADGEN_REDIS:-127.0.0.1:$REDIS_PORT}

LISTEN_ADDR=127.0.0.1:$WRITER_PORT REDIS_URL=$REDIS_URL LOG_LEVEL=${LOG_LEVEL:-warn} \
  "${pins_writer[@]}" "$BIN/writer-svc" >"$RAMP_DIR/writer-svc.log" 2>&1 &
pids+=($!)
fanout_urls=()
if [[ $RAMP_TARGET == nchan ]]; then
  # One nginx, FANOUT_NODES workers; the master is pinned and its workers inherit the CPU set.
  nchan_dir=$(realpath -m "$RAMP_DIR/nchan")
  mkdir -p "$nchan_dir"
  sed -e "s|@WORKERS@|$FANOUT_NODES|g; s|@PORT@|$FANOUT_PORT|g; s|@PUB_PORT@|$NCHAN_PUB_PORT|g" \
    -e "s|@REDIS_PORT@|$REDIS_PORT|g; s|@EXPORTER_PORT@|$NCHAN_EXPORTER_PORT|g; s|@RUN_DIR@|$nchan_dir|g" \
    -e "s|@USER@|$(id -un)|g; s|/usr/lib/nginx/modules/ngx_nchan_module.so|$NCHAN_MODULE|g" \
    scripts/nchan/nginx.conf >"$nchan_dir/nginx.conf"
  rm -f "$nchan_dir/nginx.pid"
  "${pins_fanout[@]}" nginx -p "$nchan_dir" -c "$nchan_dir/nginx.conf" -e "$nchan_dir/nginx-error.log" \
    >"$RAMP_DIR/nginx.log" 2>&1 &
  pids+=($!)
  "${pins_gen[@]}" "$BIN/loadgen" procmetrics --listen "127.0.0.1:$NCHAN_EXPORTER_PORT" \
    --pidfile "$nchan_dir/nginx.pid" --status "http://127.0.0.1:$NCHAN_PUB_PORT/nchan_status" \
    >"$RAMP_DIR/procmetrics.log" 2>&1 &
  pids+=($!)
  "${pins_gen[@]}" "$BIN/loadgen" nchan-bridge --redis "127.0.0.1:$REDIS_PORT" \
    --publisher "http://127.0.0.1:$NCHAN_PUB_PORT/pub" --redis-prefix "${REDIS_PREFIX:-likes:}" \
    >"$RAMP_DIR/nchan-bridge.log" 2>&1 &
  pids+=($!)
  fanout_urls+=("http://127.0.0.1:$FANOUT_PORT")
  wait_http "http://127.0.0.1:$WRITER_PORT/healthz" writer-svc
  wait_http "${fanout_urls[0]}/healthz" nginx
  wait_http "${fanout_urls[0]}/metrics" procmetrics
  for _ in $(seq 50); do grep -q PSUBSCRIBE "$RAMP_DIR/nchan-bridge.log" 2>/dev/null && break; sleep 0.1; done
  grep -q PSUBSCRIBE "$RAMP_DIR/nchan-bridge.log" || { echo "ramp: nchan-bridge did not subscribe; log: $RAMP_DIR/nchan-bridge.log" >&2; tail -n 20 "$RAMP_DIR/nchan-bridge.log" >&2; exit 1; }
  echo "ramp: Nchan (nginx $(nginx -v 2>&1 | sed 's|.*/||'), $FANOUT_NODES workers) in place of fanout-svc; bridge and exporter on CPU $GEN_CPUS" >&2
else
  for i in $(seq 0 $((FANOUT_NODES - 1))); do
    port=$((FANOUT_PORT + i))
    # Every viewer comes from 127.0.0.0/8, most from a few addresses: no cap per address (5,000 by default).
    LISTEN_ADDR=127.0.0.1:$port REDIS_URL=$REDIS_URL LOG_LEVEL=${LOG_LEVEL:-warn} DRAIN_WINDOW=${DRAIN_WINDOW:-1s} \
      MAX_VIEWERS_PER_IP=${MAX_VIEWERS_PER_IP:-0} "${pins_fanout[@]}" "${FANOUT_BIN:-$BIN/fanout-svc}" >"$RAMP_DIR/fanout-$i.log" 2>&1 &
    pids+=($!)
    echo $! >"$RAMP_DIR/fanout-$i.pid" # taskset execs the node: for a --kill-cmd
    fanout_urls+=("http://127.0.0.1:$port")
  done
  wait_http "http://127.0.0.1:$WRITER_PORT/healthz" writer-svc
  for i in $(seq 0 $((FANOUT_NODES - 1))); do wait_http "${fanout_urls[$i]}/healthz" "fanout-$i"; done
fi

fanout_list=$(IFS=,; echo "${fanout_urls[*]}")
echo "ramp: $(env | grep '^LOADGEN_' | sort | tr '\n' ' ')" >&2
echo "ramp: loadgen ramp --writer http://127.0.0.1:$WRITER_PORT --fanout $fanout_list --html $RAMP_DIR/ramp.html --csv $RAMP_DIR/ramp.csv $*" >&2
"${pins_gen[@]}" "$BIN/loadgen" ramp --writer "http://127.0.0.1:$WRITER_PORT" --fanout "$fanout_list" \
  --html "$RAMP_DIR/ramp.html" --csv "$RAMP_DIR/ramp.csv" "$@"
