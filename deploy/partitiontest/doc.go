// Package partitiontest cuts the network between the processes of the Redis side of likes (a
// primary, two replicas, three Sentinels) and a writer, each in a network namespace of its own,
// while clients like, unlike and read through the writer; after each fault heals it checks the
// recorded history with likehistory: a freeze or a kill of a process cannot show what a
// partitioned primary does, which is to go on answering whoever is still on its side.
//
// Its tests need root, iproute2, iptables and redis-server, and run only with LIKES_NEMESIS=1.
// Faults found to lose acknowledged likes are skipped unless LIKES_NEMESIS_KNOWN=1
// (scripts/nemesis.sh).
package partitiontest
