# sockets.sh — sourced by the benchmark scripts that open ~100,000 viewers a ramp (hundredk.sh,
# million.sh): a ramp started on top of earlier ramps' TIME_WAIT sockets timed out connecting
# thousands of its viewers as the kernel's port search walked them.

# quiet_sockets [SECONDS]: wait, at most SECONDS (120), until fewer than 5,000 sockets are in
# TIME_WAIT (they stay there 60 s after a ramp's viewers close).
quiet_sockets() {
  local deadline=$((SECONDS + ${1:-120}))
  while (($(ss -Htan state time-wait | wc -l) >= 5000)); do
    ((SECONDS < deadline)) || return 0
    sleep 2
  done
}
