package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
)

// discardedRecovery bounds how long a viewer may show a count a failover discarded, from the
// moment the new primary answers: the node's subscription notices the lost primary, reconnects
// and reads every post it holds again (relay's resync).
const discardedRecovery = 10 * time.Second

// TestViewersLeaveADiscardedLike replaces a post's primary by one that lacks a like its viewers
// were shown, as the issue emulates a failover to a replica that missed it: the primary is
// snapshotted after alice's like, takes bob's (answered and shown: REDIS_ACK_REPLICAS is 0), and
// is killed and started again from the snapshot, a Redis with a new replication id whose version
// of the post is below the one viewers saw. The old viewer moves to 1 and a new one is shown 1
// (the node's read of the new primary carries a higher epoch: package epoch), and the next like
// shows on both. Before epochs the node dropped the new primary's state as older than what it
// held: both viewers showed 2, a like that no longer existed.
func TestViewersLeaveADiscardedLike(t *testing.T) {
	srv := redistest.Start(t)
	writer := StartWriter(t, srv.URL, "REDIS_ACK_REPLICAS=0")
	node := StartFanout(t, srv.URL)
	old := Watch(t, node.URL+"/sse/df")
	poll.Until(t, 10*time.Second, "the viewer connected", old.Connected)
	like(t, writer, http.MethodPost, "df", "alice", 1)
	WaitCount(t, 10*time.Second, "df", 1, old)
	if _, err := srv.Do("SAVE"); err != nil {
		t.Fatal(err)
	}
	like(t, writer, http.MethodPost, "df", "bob", 2)
	WaitCount(t, 10*time.Second, "df", 2, old)

	srv.Restart() // from the snapshot: bob's like is gone
	back := time.Now()
	poll.Until(t, 10*time.Second, "the writer reads the new primary's count 1", func() bool {
		return storedCount(t, writer, "df") == 1
	})
	WaitCount(t, discardedRecovery, "df", 1, old)
	t.Logf("the old viewer showed the new primary's count %.2f s after it started", time.Since(back).Seconds())
	fresh := Watch(t, node.URL+"/sse/df")
	WaitCount(t, 10*time.Second, "df", 1, fresh)

	like(t, writer, http.MethodPost, "df", "carol", 2)
	WaitCount(t, 10*time.Second, "df", 2, old, fresh)
	if _, back, _ := old.Stats(); back != 0 {
		t.Errorf("the old viewer got %d updates older than one it had; want none (epochs order them)", back)
	}
}
