# procs.sh — sourced by the scripts that start a local stack (ramp.sh, likecost.sh): what each
# started is stopped on exit, ports are checked before use, and services are awaited by polling.
# The sourcing script sets LOG_DIR (where NAME.log files go) before calling wait_http.

pids=()
# stop_all: TERM every started process, up to 5 s for a graceful exit, then KILL. The EXIT, INT
# and TERM trap; it keeps the script's exit code.
stop_all() {
  local code=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  exit "$code"
}
trap stop_all EXIT INT TERM

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_http URL NAME: poll until URL answers 2xx, at most 15 s; otherwise print the tail of
# LOG_DIR/NAME.log and fail.
wait_http() {
  for _ in $(seq 150); do
    curl -fsS -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$2 did not become healthy; log: $LOG_DIR/$2.log" >&2
  tail -n 20 "$LOG_DIR/$2.log" >&2 || true
  return 1
}

# start_redis PORT [PIN...]: a throwaway redis-server on 127.0.0.1:PORT (no persistence), run
# under PIN (e.g. taskset -c 1), awaited with PING; its log is LOG_DIR/redis.log.
start_redis() {
  local port=$1
  shift
  "$@" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --daemonize no >"$LOG_DIR/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server did not start; log: $LOG_DIR/redis.log" >&2
  return 1
}
