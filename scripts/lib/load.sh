# load.sh — sourced by the scripts that start a benchmark only once the machine is quiet
# (alone.sh before its command, million.sh before each run after the first): docs/ take a figure
# only from a run whose 1-minute load average was below 1 at its start.

# quiet_load MAX SECONDS: wait, at most SECONDS, until the 1-minute load average is below MAX;
# returns 1, having said so on stderr, if it never was.
quiet_load() {
  local deadline=$((SECONDS + $2))
  until awk -v max="$1" '{ exit !($1 < max) }' /proc/loadavg; do
    if ((SECONDS >= deadline)); then
      echo "load average $(cut -d' ' -f1-3 /proc/loadavg) still at or above $1 after $2 s" >&2
      return 1
    fi
    sleep 5
  done
}
