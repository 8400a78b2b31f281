#!/usr/bin/env bash
# redis-item-memory.sh — Redis memory of 10,000 subscribed post channels (one subscriber) and of 20,000 "watching now"
# keys with an expiry, as a node makes them: used_memory before and after, per item.
set -euo pipefail
port=${PORT:-26988}
redis-server --port $port --save "" --appendonly no --daemonize yes --logfile /tmp/chanmem.log
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true' EXIT
until redis-cli -p $port ping >/dev/null 2>&1; do sleep 0.1; done
mem() { redis-cli -p $port info memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }
m0=$(mem)
{ seq 1 10000 | awk 'BEGIN{printf "*10001\r\n$9\r\nSUBSCRIBE\r\n"} {c="likes:{" $1 "}:ch"; printf "$%d\r\n%s\r\n", length(c), c}'; sleep 30; } |
  nc -q 1 127.0.0.1 $port >/dev/null &
until [[ $(redis-cli -p $port pubsub numsub 'likes:{10000}:ch' | tail -1) == 1 ]]; do sleep 0.1; done
m1=$(mem)
seq 1 20000 | awk '{print "SET likes:{" $1 "}:w:1 3 EX 6"}' | redis-cli -p $port --pipe >/dev/null
m2=$(mem)
echo "channel_b $(( (m1 - m0) / 10000 ))  watching_key_b $(( (m2 - m1) / 20000 ))  redis $(redis-server --version | awk '{print $3}')"
