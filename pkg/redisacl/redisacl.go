// Package redisacl names the Redis users of a likes deployment and what each may do, and writes them
// as ACL files for the data nodes and the Sentinels. It is the one place that says who may touch
// what: a fanout node that is taken over can read counts and hear updates, but not read the
// session signing keys (and mint a session for any user) nor store a like.
//
// The files hold SHA-256 hashes of the passwords, never the passwords: a data node checks them
// and cannot hand them out.
package redisacl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/likes/likes/pkg/rediskeys"
)

// The users. A program connects as its own user, to the data nodes and to the Sentinels alike,
// with the same password on both.
const (
	// Writer stores likes: its scripts, every key and channel under the prefix, WAIT, and INFO
	// for its memory readings. No administration (CONFIG, FLUSHALL, KEYS, MIGRATE, ...).
	Writer = "writer"
	// Fanout subscribes to the posts' channels and to the channel of post creations, reads
	// counts, versions and reaction counts for a snapshot, and adds its viewers to the "watching
	// now" keys: nothing else.
	Fanout = "fanout"
	// Monitor reads: PING, INFO and subscriber counts on the data nodes; the primary's address and
	// the quorum on the Sentinels. loadgen's readings and the Redis containers' health checks
	// connect as it. It reads no key.
	Monitor = "monitor"
	// Replica is what a replica authenticates to its primary as (masteruser): the replication
	// commands only.
	Replica = "replica"
	// Sentinel is what the Sentinels authenticate to the data nodes and to each other as: on a
	// data node, the commands Redis's Sentinel documentation lists for a failover; on a Sentinel,
	// everything.
	Sentinel = "sentinel"
	// Default is Redis's own default user, which a client that does not authenticate would be,
	// on the data nodes: it gets a password, so such a client can do nothing. It cannot be turned
	// off there: Redis 7.0 replays the append-only file as a client of the default user and
	// checks each MULTI/EXEC block against its rules (a default user without commands loses
	// every script's writes at the next start). Its password is an operator's, for
	// administration; no program uses it.
	Default = "default"
)

// Users lists every user, in the order the files name them.
var Users = []string{Writer, Fanout, Monitor, Replica, Sentinel, Default}

// Passwords maps each user to its password.
type Passwords map[string]string

// connection is what any client needs to set up a connection: go-redis sends HELLO (with AUTH)
// and CLIENT SETNAME; PING is every health check's.
const connection = "+hello +auth +ping +client|setname +client|id"

// cluster is what a Redis Cluster client asks of any node to learn the slots.
const cluster = "+cluster|slots +cluster|shards +cluster|nodes +cluster|info +readonly +readwrite"

// dataRules are the data nodes' rules for each user; %s is the key prefix.
func dataRules(prefix string) map[string]string {
	return map[string]string{
		Writer: fmt.Sprintf("~%[1]s* &%[1]s* +@all -@admin -@dangerous +info", prefix),
		Fanout: fmt.Sprintf("%%R~%[1]s{*}:count %%R~%[1]s{*}:ver %%R~%[1]s{*}:rx %%R~%[1]sepoch ~%[1]s{*}:w:* &%[1]s{*}:ch &%[1]screated "+
			"-@all %[2]s %[3]s +get +mget +hgetall +incrby +pexpire "+
			"+subscribe +ssubscribe +unsubscribe +sunsubscribe +info",
			prefix, connection, cluster),
		Monitor: fmt.Sprintf("-@all %s %s +info +pubsub|numsub +pubsub|shardnumsub", connection, cluster),
		Replica: "-@all +psync +replconf +ping",
		// Redis's Sentinel documentation lists these ("Redis Access Control List authentication").
		Sentinel: "allchannels -@all +multi +exec +slaveof +replicaof +ping +subscribe +config|rewrite +role " +
			"+publish +info +client|setname +client|kill +script|kill",
		Default: "allkeys allchannels +@all",
	}
}

// sentinelRules are the Sentinels' rules for each user that talks to them: the services find the
// primary and follow failovers (go-redis's failover client asks these and listens to the
// Sentinels' event channels); the writer also reads the primary's entry (SENTINEL MASTER: its run
// id, for REDIS_ACK_REPLICAS=all); Monitor also checks the quorum; the Sentinels reach each other
// as Sentinel. Nobody else may reconfigure them (SENTINEL SET, REMOVE, FAILOVER).
func sentinelRules() map[string]string {
	find := "allchannels -@all " + connection +
		" +sentinel|get-master-addr-by-name +sentinel|sentinels +sentinel|replicas +sentinel|slaves" +
		" +subscribe +psubscribe +unsubscribe +punsubscribe"
	return map[string]string{
		Writer:   find + " +sentinel|master",
		Fanout:   find,
		Monitor:  find + " +sentinel|ckquorum +info",
		Sentinel: "allchannels +@all",
	}
}

// DataNodes is the ACL file of the data nodes: every user with its password's hash and rules, the
// default user among them with a password (see Default), so that a client that does not
// authenticate can do nothing. prefix is the key prefix of the deployment (REDIS_PREFIX).
func DataNodes(prefix string, pw Passwords) (string, error) {
	return file(prefix, pw, dataRules(prefix), Users, "")
}

// Sentinels is the ACL file of the Sentinels, in the same form, with the default user off.
func Sentinels(prefix string, pw Passwords) (string, error) {
	return file(prefix, pw, sentinelRules(), []string{Writer, Fanout, Monitor, Sentinel},
		"user default off resetpass nocommands resetkeys resetchannels\n")
}

func file(prefix string, pw Passwords, rules map[string]string, users []string, head string) (string, error) {
	if err := checkPrefix(prefix); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(head)
	for _, u := range users {
		p := pw[u]
		if len(p) < MinPasswordLen {
			return "", fmt.Errorf("redisacl: the password of %s is %d bytes; at least %d are needed", u, len(p), MinPasswordLen)
		}
		sum := sha256.Sum256([]byte(p))
		fmt.Fprintf(&b, "user %s on resetpass #%s resetkeys resetchannels %s\n", u, hex.EncodeToString(sum[:]), rules[u])
	}
	return b.String(), nil
}

// checkPrefix refuses a prefix that an ACL key pattern would read as more than itself (a glob
// character) or that would split the rule (a space): the rules would then grant other keys.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("redisacl: empty key prefix; the default is %q", rediskeys.DefaultPrefix)
	}
	if i := strings.IndexAny(prefix, "*?[]\\{} \t\r\n"); i >= 0 {
		return fmt.Errorf("redisacl: key prefix %q holds %q, which an ACL pattern would not read literally", prefix, prefix[i])
	}
	return nil
}
