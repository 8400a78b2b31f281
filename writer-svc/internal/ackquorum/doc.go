// Package ackquorum decides, for REDIS_ACK_REPLICAS=all, how many replicas must confirm a batch
// of likes (WAIT) before it is acknowledged: every replica that a majority of the Sentinels does
// not call down.
//
// WAIT 1 is not enough under Sentinel: a partition that leaves the primary, one replica and the
// writer on one side and the other replica with a majority of the Sentinels on the other
// acknowledges likes through the first replica, while the far side promotes the second; when the
// partition heals, the old primary and its replica follow the new primary and what they took
// meanwhile is gone. Waiting for every replica closes that (a like acknowledged is then on every
// data node, and any promotion picks one that has it), but alone it would stop every like while
// one replica is down. So a replica is left out only once a majority of the Sentinels, asked by
// this writer, call it down: a writer that cannot reach such a majority (the minority side of a
// partition) waits for every replica, and a writer beside a replica that really died waits for
// the others once the Sentinels agree (down-after-milliseconds, then one poll).
package ackquorum
