#!/usr/bin/env bash
# run.sh — the local deployment behind `make run` (which builds bin/ first): redis-server with the
# append-only file on, one writer-svc and two fanout-svc nodes as local processes, then ready-to-
# paste curl examples. It waits until Ctrl-C (or until one of its processes dies) and then stops
# everything it started.
#
# On a fresh Debian or Ubuntu machine it installs redis-server (and curl) with apt-get when they
# are missing; set REDIS_URL to use an existing Redis instead of starting one.
#
# Environment (defaults):
#   REDIS_URL      unset: start redis-server on 127.0.0.1:$REDIS_PORT with its data in $RUN_DIR/redis
#   REDIS_PORT     6390 (not 6379, so that a system Redis does not collide)
#   APPENDFSYNC    everysec: fsync the AOF once a second (a machine crash may lose ~1 s of likes);
#                  always: fsync before every reply (no acknowledged like is lost; slower)
#   WRITER_PORT    8080   FANOUT_PORT 8090 (node 1; node 2 on FANOUT_PORT+1)
#   LISTEN_HOST    127.0.0.1 (0.0.0.0 to reach the services from other machines)
#   BIN            bin    RUN_DIR .run (logs: $RUN_DIR/*.log)
# Any other service variable (LIKE_RATE, PAGE_POSTS, LOG_LEVEL, ...) is passed through.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
RUN_DIR=${RUN_DIR:-.run}
REDIS_PORT=${REDIS_PORT:-6390}
APPENDFSYNC=${APPENDFSYNC:-everysec}
WRITER_PORT=${WRITER_PORT:-8080}
FANOUT_PORT=${FANOUT_PORT:-8090}
LISTEN_HOST=${LISTEN_HOST:-127.0.0.1}
FANOUT_PORTS=("$FANOUT_PORT" "$((FANOUT_PORT + 1))")
READY_TIMEOUT=${READY_TIMEOUT:-30} # seconds each process has to become ready

say() { echo "run: $*" >&2; }
die() { say "$*"; exit 1; }

case $APPENDFSYNC in always | everysec | no) ;; *) die "APPENDFSYNC=$APPENDFSYNC: want always, everysec or no" ;; esac
for b in writer-svc fanout-svc; do
  [[ -x $BIN/$b ]] || die "$BIN/$b missing: run \`make run\` (it builds bin/ first)"
done

# install PACKAGE...: apt-get install as root, or through sudo.
install() {
  command -v apt-get >/dev/null || die "missing $*: install it with your package manager and rerun"
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || die "missing $*: run as root or install sudo"
    sudo=(sudo)
  fi
  say "installing $* with apt-get"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
need=()
command -v curl >/dev/null || need+=(curl)
if [[ -z ${REDIS_URL:-} ]]; then
  command -v redis-server >/dev/null || need+=(redis-server)
  command -v redis-cli >/dev/null || need+=(redis-tools)
fi
((${#need[@]} == 0)) || install "${need[@]}"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=("$WRITER_PORT" "${FANOUT_PORTS[@]}")
[[ -n ${REDIS_URL:-} ]] || ports+=("$REDIS_PORT")
for p in "${ports[@]}"; do
  port_free "$p" || die "port $p is in use (another make run?); free it or set WRITER_PORT/FANOUT_PORT/REDIS_PORT"
done

mkdir -p "$RUN_DIR"
pids=() names=()
# terminate SECONDS PID...: SIGTERM the processes, wait up to SECONDS for them, then SIGKILL.
terminate() {
  local limit=$1
  shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  local deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)); do
    local alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}
# stop: the services first (fanout nodes drain their viewers, the writer finishes in-flight likes),
# then Redis, which writes out its append-only file on SIGTERM.
stop() {
  local code=$?
  trap - EXIT INT TERM
  ((${#pids[@]})) || exit "$code"
  say "stopping ${names[*]}"
  local services=() redis=()
  for i in "${!pids[@]}"; do
    if [[ ${names[$i]} == redis ]]; then redis+=("${pids[$i]}"); else services+=("${pids[$i]}"); fi
  done
  terminate 20 "${services[@]}"
  terminate 10 "${redis[@]}"
  wait 2>/dev/null || true
  say "stopped"
  exit "$code"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME COMMAND...: run in the background with output to $RUN_DIR/NAME.log.
start() {
  local name=$1
  shift
  "$@" >"$RUN_DIR/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# wait_ready NAME URL: poll URL until it answers 2xx, at most READY_TIMEOUT seconds.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  until curl -fsS -o /dev/null --max-time 1 "$2" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      say "$1 not ready at $2 after ${READY_TIMEOUT}s; last lines of $RUN_DIR/$1.log:"
      tail -n 20 "$RUN_DIR/$1.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

if [[ -z ${REDIS_URL:-} ]]; then
  mkdir -p "$RUN_DIR/redis"
  start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --protected-mode no --daemonize no \
    --dir "$(cd "$RUN_DIR/redis" && pwd)" --appendonly yes --appendfsync "$APPENDFSYNC" --save ""
  deadline=$((SECONDS + READY_TIMEOUT))
  until [[ $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; do
    ((SECONDS < deadline)) || { tail -n 20 "$RUN_DIR/redis.log" >&2; die "redis-server did not start"; }
    sleep 0.2
  done
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
  redis_note="(appendonly yes, appendfsync $APPENDFSYNC, data in $RUN_DIR/redis)"
else
  redis_note="(REDIS_URL from the environment)"
fi
export REDIS_URL

# A fanout node admits viewers up to its open-file limit: take the hard limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

page_origins=()
for p in "${FANOUT_PORTS[@]}"; do page_origins+=("http://localhost:$p" "http://127.0.0.1:$p"); done
start writer-svc env LISTEN_ADDR="$LISTEN_HOST:$WRITER_PORT" \
  CORS_ORIGINS="${CORS_ORIGINS:-$(IFS=,; echo "${page_origins[*]}")}" "$BIN/writer-svc"
for i in "${!FANOUT_PORTS[@]}"; do
  start "fanout-$((i + 1))" env LISTEN_ADDR="$LISTEN_HOST:${FANOUT_PORTS[$i]}" \
    WRITER_PUBLIC_URL="${WRITER_PUBLIC_URL:-http://localhost:$WRITER_PORT}" "$BIN/fanout-svc"
done
wait_ready writer-svc "http://127.0.0.1:$WRITER_PORT/readyz"
for i in "${!FANOUT_PORTS[@]}"; do wait_ready "fanout-$((i + 1))" "http://127.0.0.1:${FANOUT_PORTS[$i]}/readyz"; done

W=http://localhost:$WRITER_PORT F1=http://localhost:${FANOUT_PORTS[0]} F2=http://localhost:${FANOUT_PORTS[1]}
cat <<MSG

likes is running:
  writer-svc   $W        log $RUN_DIR/writer-svc.log
  fanout-svc   $F1        log $RUN_DIR/fanout-1.log
  fanout-svc   $F2        log $RUN_DIR/fanout-2.log
  redis        $REDIS_URL  $redis_note

The live page:  $F1/

Watch post 42 on both fanout nodes (one terminal each), then like it from a third:
  curl -N $F1/sse/42
  curl -N $F2/sse/42
Several posts on one stream:
  curl -N '$F1/sse?posts=42,43,44'
A like needs a session (a signed token for a new anonymous user); take one per user:
  A=\$(curl -s -X POST $W/session | sed -E 's/.*"token":"([^"]+)".*/\\1/')
  B=\$(curl -s -X POST $W/session | sed -E 's/.*"token":"([^"]+)".*/\\1/')
Like, like again (no change: "liked":false), another user, unlike, count:
  curl -X POST   -H "Authorization: Bearer \$A" $W/like/42
  curl -X POST   -H "Authorization: Bearer \$A" $W/like/42
  curl -X POST   -H "Authorization: Bearer \$B" $W/like/43
  curl -X DELETE -H "Authorization: Bearer \$A" $W/like/42
  curl $W/count/42

Ctrl-C stops everything started here.
MSG

# Wait for Ctrl-C; if a process dies first, say which and stop the rest.
set +e
wait -n "${pids[@]}"
code=$?
set -e
for i in "${!pids[@]}"; do
  if ! kill -0 "${pids[$i]}" 2>/dev/null; then
    say "${names[$i]} exited (status $code); see $RUN_DIR/${names[$i]}.log"
  fi
done
exit 1
