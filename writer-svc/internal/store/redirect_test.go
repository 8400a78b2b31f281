package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestLikeWaitsOutSlotMove moves a liked post's slot by hand, step by step, while a new user likes
// it, once through the cluster client (go-redis follows ASK) and once on the acknowledged path
// (a node client: the store follows ASK itself, with ASKING, so the script and its WAIT run on
// the node that imports the slot). While the count is still on the source, the source answers
// TRYAGAIN; once every key is on the target, the source answers ASK and the target, still
// importing, TRYAGAIN; the like must keep waiting, and succeed as soon as the target owns the
// slot, before the source is told (so through the ASK), counted once.
func TestLikeWaitsOutSlotMove(t *testing.T) {
	// With replicas, so that the acknowledged path's WAIT is answered: a WAIT for a replica the
	// cluster lacks would hold every attempt for its whole timeout.
	c := redistest.StartClusterWithReplicas(t, 3, 1)
	cc := c.Client(t)
	for _, tt := range []struct {
		name, post string
		acks       int
	}{{"cluster-client", "mv1", 0}, {"acked", "mv2", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := store.New(cc, storetest.Keys, store.Options{Cluster: true, AckReplicas: tt.acks})
			t.Cleanup(s.Close) // its late publisher (late.go)
			if err := s.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Like(ctx, tt.post, "first"); err != nil {
				t.Fatal(err)
			}
			slot := c.Slot(storetest.Keys.Count(tt.post))
			src := c.NodeFor(storetest.Keys.Count(tt.post))
			masters := c.Masters()
			dst := masters[0]
			if dst == src {
				dst = masters[1]
			}
			srcID, dstID := nodeID(t, src), nodeID(t, dst)
			do(t, dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
			do(t, src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)

			type answer struct {
				res store.Result
				err error
			}
			done := make(chan answer, 1)
			go func() { // exits when the like is answered: within its 5 s deadline
				lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				res, err := s.Like(lctx, tt.post, "mover")
				done <- answer{res, err}
			}()
			tryAgain := errorReplies(t, src, "TRYAGAIN")
			poll.Until(t, 5*time.Second, "the source to refuse the like twice more", func() bool {
				return errorReplies(t, src, "TRYAGAIN") >= tryAgain+2
			})
			host, port, _ := strings.Cut(dst.Addr, ":")
			asked, importing := errorReplies(t, src, "ASK"), errorReplies(t, dst, "TRYAGAIN")
			keysIn, _ := do(t, src, "CLUSTER", "GETKEYSINSLOT", slot, 1000).([]any)
			do(t, src, append([]any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}, keysIn...)...)
			poll.Until(t, 5*time.Second, "the like sent on to the target and refused there", func() bool {
				return errorReplies(t, src, "ASK") > asked && errorReplies(t, dst, "TRYAGAIN") > importing
			})
			select {
			case a := <-done:
				t.Fatalf("like answered while its slot was moving: %+v, %v; want it to wait", a.res, a.err)
			default:
			}

			do(t, dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
			a := <-done
			if a.err != nil || a.res != (store.Result{Count: 2, Changed: true}) {
				t.Errorf("like during the move: %+v, %v; want count 2, changed", a.res, a.err)
			}
			if n, err := dst.Do("GET", storetest.Keys.Count(tt.post)); err != nil || n != "2" {
				t.Errorf("count on the new owner: %v, %v; want 2, the like counted once there", n, err)
			}
			if n, err := dst.Do("EXISTS", storetest.Keys.User(tt.post, "mover")); err != nil || n != int64(1) {
				t.Errorf("dedup key of the like on the new owner: %v, %v; want it there", n, err)
			}
			for _, n := range masters {
				if n != dst {
					do(t, n, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
				}
			}
			c.WaitHealthy()
		})
	}
}

func nodeID(t *testing.T, n *redistest.Server) string {
	t.Helper()
	id, _ := do(t, n, "CLUSTER", "MYID").(string)
	return id
}

func do(t *testing.T, n *redistest.Server, args ...any) any {
	t.Helper()
	res, err := n.Do(args...)
	if err != nil {
		t.Fatalf("%s %v: %v", n.Addr, args, err)
	}
	return res
}
