package ackquorum

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// TestReplicasLeavesOutOnlyWhatAMajorityCallsDown: the count is every listed replica less those a
// majority of all the Sentinels call down; a writer that hears from a minority waits for as many
// as a majority last listed; stale answers count as no answer.
func TestReplicasLeavesOutOnlyWhatAMajorityCallsDown(t *testing.T) {
	clock := time.Now()
	q := New(make([]*redis.SentinelClient, 3), "mymaster", nil, Options{Every: time.Second})
	q.now = func() time.Time { return clock }
	q.runID = "p"
	see := func(i int, down map[string]bool) { q.views[i] = view{at: clock, primary: "p", down: down} }
	if n := q.Replicas(); n != 1 {
		t.Errorf("before any answer: %d; want 1", n)
	}
	up := map[string]bool{"r1": false, "r2": false}
	see(0, up)
	see(1, up)
	if n := q.Replicas(); n != 2 {
		t.Errorf("two of three list two replicas up: %d; want 2", n)
	}
	oneDown := map[string]bool{"r1": false, "r2": true}
	see(0, oneDown)
	if n := q.Replicas(); n != 2 {
		t.Errorf("one Sentinel of three calls r2 down: %d; want 2", n)
	}
	see(1, oneDown)
	if n := q.Replicas(); n != 1 {
		t.Errorf("two of three call r2 down: %d; want 1", n)
	}
	// The minority side of a partition: one Sentinel answers, and calls the far replica down.
	clock = clock.Add(10 * time.Second)
	see(0, oneDown)
	q.listed = 2
	if n := q.Replicas(); n != 2 {
		t.Errorf("one Sentinel of three answers: %d; want the 2 a majority last listed", n)
	}
}

// TestWriterOnAnOldPrimaryWaitsForAll: a writer whose client still reaches a primary that the
// majority replaced (a partition just healed) waits for every listed replica, the old primary
// included, though the majority calls it down; once its client follows the failover, the down
// node is left out; with no majority naming one primary, as many as were listed last.
func TestWriterOnAnOldPrimaryWaitsForAll(t *testing.T) {
	clock := time.Now()
	q := New(make([]*redis.SentinelClient, 3), "mymaster", nil, Options{Every: time.Second})
	q.now = func() time.Time { return clock }
	see := func(primary string, down map[string]bool) {
		for i := range 2 {
			q.views[i] = view{at: clock, primary: primary, down: down}
		}
	}
	q.runID = "a"
	see("c", map[string]bool{"a": true, "b": false})
	if n := q.Replicas(); n != 2 {
		t.Errorf("the writer on the old primary a, which the majority calls down: %d; want 2", n)
	}
	q.runID = "c"
	if n := q.Replicas(); n != 1 {
		t.Errorf("the writer on the new primary: %d; want 1 (a is down)", n)
	}
	for i := range 2 {
		q.views[i] = view{at: clock, primary: []string{"a", "c"}[i], down: map[string]bool{"a": false, "b": true}}
	}
	if n := q.Replicas(); n != 2 {
		t.Errorf("no majority naming one primary: %d; want the 2 listed last", n)
	}
}

// TestReplicaKilledLeavesTheCountOnceTheSentinelsAgree: with a primary, two replicas and three
// real Sentinels, a batch waits for both replicas; once one is killed and the Sentinels call it
// down, for the other alone; and for both again once it is back.
func TestReplicaKilledLeavesTheCountOnceTheSentinelsAgree(t *testing.T) {
	sn := redistest.StartSentinel(t, 2)
	clients := sentinelClients(t, sn)
	q := New(clients, sn.Master, sn.Primary().Client(t), Options{Every: 100 * time.Millisecond})
	stop := q.Start(context.Background())
	defer stop()
	poll.Until(t, 10*time.Second, "both replicas to be waited for", func() bool { return q.Replicas() == 2 })
	victim := sn.Nodes[2]
	victim.Kill()
	poll.Until(t, 15*time.Second, "the killed replica left out once the Sentinels call it down", func() bool { return q.Replicas() == 1 })
	victim.Restart()
	poll.Until(t, 15*time.Second, "the replica waited for again once back", func() bool { return q.Replicas() == 2 })
}

// TestPromotedReplicaKnownByItsAddress: right after a failover the Sentinels name the promoted
// node by address alone (no run id until they have read its INFO, seconds later); the count
// takes the run id they gave for that address while it was a replica, so a writer already on it
// leaves out the old primary once a majority calls it down. A primary at an address never seen
// with a run id counts as no answer.
func TestPromotedReplicaKnownByItsAddress(t *testing.T) {
	q := New(make([]*redis.SentinelClient, 3), "mymaster", nil, Options{Every: time.Second})
	node := func(host, runID, flags string) map[string]string {
		return map[string]string{"name": host + ":6379", "ip": host, "port": "6379", "runid": runID, "flags": flags}
	}
	for i := range 3 {
		q.see(i, node("a", "A", "master"), []map[string]string{node("b", "B", "slave"), node("c", "C", "slave")})
	}
	q.runID = "B"
	if n := q.Replicas(); n != 2 {
		t.Fatalf("before the failover: %d; want 2", n)
	}
	for i := range 2 {
		q.see(i, node("b", "", "master"), []map[string]string{node("a", "", "slave,s_down"), node("c", "", "slave")})
	}
	if n := q.Replicas(); n != 1 {
		t.Errorf("b promoted, named without a run id, a called down: %d; want 1", n)
	}
	q = New(make([]*redis.SentinelClient, 3), "mymaster", nil, Options{Every: time.Second})
	q.runID, q.listed = "D", 2
	for i := range 3 {
		q.see(i, node("d", "", "master"), []map[string]string{node("a", "", "slave,s_down"), node("c", "", "slave")})
	}
	if n := q.Replicas(); n != 2 {
		t.Errorf("a primary whose run id no Sentinel ever gave: %d; want the 2 listed last", n)
	}
}

// TestPrimaryKilledLeavesTheCountOnceTheSentinelsAgree: with a primary, two replicas, three real
// Sentinels and the writer's client following them, a batch waits for both replicas; once the
// primary is killed and a replica promoted, for the one replica left.
func TestPrimaryKilledLeavesTheCountOnceTheSentinelsAgree(t *testing.T) {
	sn := redistest.StartSentinel(t, 2)
	clients := sentinelClients(t, sn)
	node := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sn.Master, SentinelAddrs: sn.SentinelAddrs()})
	t.Cleanup(func() { _ = node.Close() })
	q := New(clients, sn.Master, node, Options{Every: 100 * time.Millisecond})
	stop := q.Start(context.Background())
	defer stop()
	poll.Until(t, 10*time.Second, "both replicas to be waited for", func() bool { return q.Replicas() == 2 })
	old := sn.KillPrimary()
	sn.WaitPromoted(old)
	poll.Until(t, 15*time.Second, "the killed primary left out once the Sentinels call it down", func() bool { return q.Replicas() == 1 })
}

// sentinelClients returns a client of each of sn's Sentinels, closed when t ends.
func sentinelClients(t *testing.T, sn *redistest.Sentinel) []*redis.SentinelClient {
	var clients []*redis.SentinelClient
	for _, addr := range sn.SentinelAddrs() {
		c := redis.NewSentinelClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	return clients
}
