// Package partitiontest cuts the network between the processes of the Redis side of likes (a
// primary, two replicas, three Sentinels), a writer and two fanout nodes, each in a network
// namespace of its own, while clients like, unlike and read through the writer and viewers watch
// every post on both nodes; after each fault heals it checks the recorded history, the counts the
// viewers were shown included, with likehistory: a freeze or a kill of a process cannot show what a
// partitioned primary does, which is to go on answering whoever is still on its side.
//
// The nemesis also freezes (SIGSTOP) and kills (SIGKILL, then a restart) any one process, and
// fills a data node's disk (its directory is a tmpfs of its own). TestPartitions runs each fault
// once (`make test`); TestRandomSchedule runs a seeded random sequence of them on one cluster for
// LIKES_NEMESIS_MINUTES (scripts/nemesis.sh MINUTES SEED).
//
// Its tests need root, iproute2, iptables, mount and redis-server, and run only with
// LIKES_NEMESIS=1. Every fault's history must be linearizable, with no acknowledged like lost and
// no refused like applied.
package partitiontest
