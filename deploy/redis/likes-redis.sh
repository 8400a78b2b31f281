#!/bin/sh
# likes-redis.sh starts the Redis side of likes: the data nodes (a primary and its replicas) and
# the Sentinels that watch them and promote a replica when the primary fails. docker-compose.yml
# mounts this file and deploy/base ships it as the ConfigMap likes-redis-scripts, so both
# deployments start Redis the same way. It runs in the redis image (redis-server, redis-cli, a
# POSIX sh) and hands over to the image's entrypoint, which drops root when started as root.
#
#   likes-redis.sh node [redis-server options]   a data node; the options go to redis-server
#   likes-redis.sh sentinel                      a Sentinel
#   likes-redis.sh check-node                    health: answers, and a replica's link is up
#   likes-redis.sh check-sentinel                health: knows the primary and has a quorum
#
# Environment (every name a host the others resolve: Sentinel runs with resolve-hostnames and
# announce-hostnames, so clients are handed names that survive a restart, not addresses):
#   REDIS_NODE                 node: this node's name, announced to the primary and the Sentinels
#   SENTINEL_NAME              sentinel: this Sentinel's name, announced to the other Sentinels
#   REDIS_INITIAL_PRIMARY      the data node that is the primary when no Sentinel names one (its
#                              name; every data node listens on 6379)
#   REDIS_SENTINEL_ADDRS       every Sentinel, host:port, comma-separated (as the services get it)
#   REDIS_SENTINEL_MASTER      the name the Sentinels monitor the primary under (mymaster)
#   SENTINEL_QUORUM            Sentinels that must agree the primary is down (2 of 3)
#   SENTINEL_DOWN_AFTER_MS     no valid reply for this long: a Sentinel calls a node down (1500;
#                              not 1000: docker-compose.yml says why)
#   SENTINEL_FAILOVER_TIMEOUT_MS  how long a failover may take; a failed one is retried after twice this (2000)
#   SENTINEL_CONF              sentinel: its configuration file (/data/sentinel.conf)
#   REDIS_PRIMARY_WAIT         node: seconds a replica waits for its primary to answer (10)
#   REDIS_CREDENTIALS          a directory of the files `credentials` made (see below); unset:
#                              no authentication (a test's throwaway Redis)
#
# Credentials (REDIS_CREDENTIALS; both shipped deployments set it): a data node loads the users
# of redis-users.acl (pkg/redisacl: one user per role, the default user's with a password) and authenticates
# to its primary as the replica user (replica.password); a Sentinel loads sentinel-users.acl and
# authenticates to the data nodes and to the other Sentinels as the sentinel user
# (sentinel.password). The health checks and the questions this script asks connect as the
# monitor user (monitor.password). Passwords reach redis-server on its standard input, never on
# its command line, which any process of the machine can read.
set -eu

master=${REDIS_SENTINEL_MASTER:-mymaster}
creds=${REDIS_CREDENTIALS:-}

# secret prints the file $1 of the credentials directory, failing when it is missing.
secret() {
	[ -s "$creds/$1" ] || {
		echo "likes-redis: $creds/$1 is missing or empty (REDIS_CREDENTIALS)" >&2
		exit 1
	}
	cat "$creds/$1"
}

# The questions this script asks (the health checks, the primary's address) connect as the
# monitor user when the deployment has credentials: `redis-cli $cli_user`. REDISCLI_AUTH keeps its
# password off the command line; it is unset before redis-server starts.
cli_user=
if [ -n "$creds" ]; then
	REDISCLI_AUTH=$(secret monitor.password)
	export REDISCLI_AUTH
	cli_user="--user monitor"
fi

# sentinels prints the Sentinels' host:port addresses, one per line.
sentinels() {
	echo "${REDIS_SENTINEL_ADDRS:-}" | tr ', ' '\n\n' | sed '/^$/d'
}

# ask_primary prints "host port" of the primary as the first other Sentinel that answers names
# it, and nothing when none does (the first start: the Sentinels start after the data nodes).
ask_primary() {
	for s in $(sentinels); do
		host=${s%:*}
		port=${s##*:}
		[ "$host" = "${SENTINEL_NAME:-}" ] && continue
		# redis-cli exits 0 on an error reply and prints it: accept only "host\nport".
		out=$(timeout 2 redis-cli $cli_user -h "$host" -p "$port" --raw sentinel get-master-addr-by-name "$master" 2>/dev/null) || continue
		name=$(echo "$out" | sed -n 1p)
		port=$(echo "$out" | sed -n 2p)
		case $port in '' | *[!0-9]*) continue ;; esac
		case $name in '' | *' '*) continue ;; esac
		echo "$name $port"
		return 0
	done
}

# wait_primary waits until the data node $1 (port $2) answers, for at most REDIS_PRIMARY_WAIT
# seconds. A replica that starts while its primary is down reports no time since its link went
# down, so the Sentinels could promote it before it has synced, losing what only the primary had
# (after every data node was down, they all start at once): it waits for the primary first, and
# starts anyway when the primary does not come, since it may be gone for good and this node must
# be up to replace it.
wait_primary() {
	deadline=$(($(date +%s) + ${REDIS_PRIMARY_WAIT:-10}))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		case $(timeout 2 redis-cli $cli_user -h "$1" -p "$2" ping 2>/dev/null) in PONG | LOADING*) return 0 ;; esac
		sleep 0.5
	done
	echo "likes-redis: primary $1 did not answer within ${REDIS_PRIMARY_WAIT:-10}s; starting as its replica anyway" >&2
}

# node starts a data node: the primary the Sentinels name (a node restarted after a failover
# comes back as a replica of the new primary), else REDIS_INITIAL_PRIMARY, with every other
# node its replica.
node() {
	: "${REDIS_NODE:?set REDIS_NODE to this node's name}" "${REDIS_INITIAL_PRIMARY:?set REDIS_INITIAL_PRIMARY}"
	primary=$(ask_primary)
	primary=${primary:-$REDIS_INITIAL_PRIMARY 6379}
	host=${primary% *}
	port=${primary#* }
	set -- "$@" --port 6379 --replica-announce-ip "$REDIS_NODE"
	if [ "$host" = "$REDIS_NODE" ]; then
		echo "likes-redis: $REDIS_NODE starts as the primary" >&2
	else
		wait_primary "$host" "$port"
		echo "likes-redis: $REDIS_NODE starts as a replica of $host:$port" >&2
		set -- "$@" --replicaof "$host" "$port"
	fi
	unset REDISCLI_AUTH
	if [ -z "$creds" ]; then
		exec docker-entrypoint.sh redis-server "$@"
	fi
	# Every node gets masteruser and masterauth, not only a replica: a primary becomes one when
	# the Sentinels fail it over. "-" (last) reads these lines from standard input. Protected
	# mode is an option, after the image's own: options outrank the standard input.
	secret redis-users.acl >/dev/null
	exec docker-entrypoint.sh redis-server "$@" --protected-mode yes - <<EOF
aclfile $creds/redis-users.acl
masteruser replica
masterauth $(secret replica.password)
EOF
}

# sentinel starts a Sentinel. Sentinel rewrites its configuration file as it learns the topology
# (the replicas, the other Sentinels, each failover's epoch), so the file lives in a writable
# directory that outlives a restart of the container and is written only when missing: a
# restarted Sentinel keeps what it knew (but for its timing, which follows the environment:
# sentinel_timing). Its id is derived from its name, so a Sentinel whose
# file was lost (a new container or pod) comes back under the id the others know: with a new id
# they would count it twice, and a failover would need a majority of four.
sentinel() {
	: "${SENTINEL_NAME:?set SENTINEL_NAME to this Sentinel's name}" "${REDIS_INITIAL_PRIMARY:?set REDIS_INITIAL_PRIMARY}"
	conf=${SENTINEL_CONF:-/data/sentinel.conf}
	if [ ! -s "$conf" ]; then
		primary=$(ask_primary)
		primary=${primary:-$REDIS_INITIAL_PRIMARY 6379}
		cat >"$conf.new" <<EOF
port 26379
protected-mode no
dir $(dirname "$conf")
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $SENTINEL_NAME
sentinel myid $(printf %s "$SENTINEL_NAME" | sha1sum | cut -c1-40)
sentinel monitor $master $primary ${SENTINEL_QUORUM:-2}
sentinel down-after-milliseconds $master ${SENTINEL_DOWN_AFTER_MS:-1500}
sentinel failover-timeout $master ${SENTINEL_FAILOVER_TIMEOUT_MS:-2000}
sentinel parallel-syncs $master 1
EOF
		mv "$conf.new" "$conf"
		echo "likes-redis: $SENTINEL_NAME monitors $master at $primary" >&2
	fi
	sentinel_timing "$conf"
	unset REDISCLI_AUTH
	if [ -n "$creds" ]; then
		sentinel_auth "$conf"
		exec docker-entrypoint.sh redis-server "$conf" --sentinel --protected-mode yes
	fi
	exec docker-entrypoint.sh redis-server "$conf" --sentinel
}

# sentinel_timing writes the timing of the environment into the Sentinel's file $1 when the file
# has another, so that a Sentinel whose file outlived a change of it (compose keeps a container's
# /data when it recreates the container) runs with the one shipped now; a file that has it already
# is left as Sentinel wrote it.
sentinel_timing() {
	down_line="sentinel down-after-milliseconds $master ${SENTINEL_DOWN_AFTER_MS:-1500}"
	failover_line="sentinel failover-timeout $master ${SENTINEL_FAILOVER_TIMEOUT_MS:-2000}"
	grep -qx "$down_line" "$1" && grep -qx "$failover_line" "$1" && return 0
	grep -Ev "^sentinel (down-after-milliseconds|failover-timeout) $master " "$1" >"$1.new" || true
	printf '%s\n%s\n' "$down_line" "$failover_line" >>"$1.new"
	chmod 600 "$1.new"
	mv "$1.new" "$1"
	echo "likes-redis: $SENTINEL_NAME takes down-after ${SENTINEL_DOWN_AFTER_MS:-1500} ms, failover-timeout ${SENTINEL_FAILOVER_TIMEOUT_MS:-2000} ms" >&2
}

# sentinel_auth writes the credentials into the Sentinel's file $1 at every start, in place of
# those it had, so that a Sentinel whose file outlived a change of passwords takes the new ones.
sentinel_auth() {
	pw=$(secret sentinel.password)
	secret sentinel-users.acl >/dev/null
	grep -Ev "^(aclfile|protected-mode|sentinel (auth-user|auth-pass|sentinel-user|sentinel-pass)) " "$1" >"$1.new" || true
	cat >>"$1.new" <<EOF
aclfile $creds/sentinel-users.acl
protected-mode yes
sentinel auth-user $master sentinel
sentinel auth-pass $master $pw
sentinel sentinel-user sentinel
sentinel sentinel-pass $pw
EOF
	chmod 600 "$1.new"
	mv "$1.new" "$1"
}

# check_node: a primary answers PING (PONG only once its data is loaded); a replica also has its
# link to the primary up, so that "healthy" means it holds the data.
check_node() {
	[ "$(redis-cli $cli_user -p 6379 ping)" = PONG ] || return 1
	redis-cli $cli_user -p 6379 info replication | grep -Eq '^(role:master|master_link_status:up)'
}

# check_sentinel: the Sentinel knows the primary and enough Sentinels to reach the quorum and
# authorize a failover.
check_sentinel() {
	redis-cli $cli_user -p 26379 sentinel ckquorum "$master" | grep -q '^OK'
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
node) node "$@" ;;
sentinel) sentinel ;;
check-node) check_node ;;
check-sentinel) check_sentinel ;;
*)
	echo "usage: likes-redis.sh node [redis-server options] | sentinel | check-node | check-sentinel" >&2
	exit 2
	;;
esac
