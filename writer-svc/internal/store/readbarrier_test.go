package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestConcurrentReadsShareBarriers: 100 reads at once with a replica to confirm them cost the
// primary a handful of barriers (a SET and a WAIT each), not one each; every read is confirmed.
// readGap is the read barrier gap of the stores whose barriers these tests count: with it, the
// count is bounded by construction (one barrier per gap), not by how fast the machine runs the
// reads. The default, no gap, shares as well; docs/BENCHMARKS.md measures it.
const readGap = 20 * time.Millisecond

func TestConcurrentReadsShareBarriers(t *testing.T) {
	primary := redistest.Start(t)
	redistest.StartReplica(t, primary)
	s := storetest.StoreOn(t, primary.Addr, store.Options{AckReplicas: 1, ReadBarrierGap: readGap})
	t.Cleanup(s.Close)
	if _, err := primary.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	const reads = 100
	var wg, read sync.WaitGroup
	confirm := make(chan struct{}) // closed once every read has its data: they confirm together
	errs := make(chan error, reads)
	read.Add(reads)
	for range reads {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := s.Count(ctx, "p")
			read.Done()
			<-confirm
			if err == nil {
				err = s.ConfirmRead(ctx, "p")
			}
			errs <- err
		})
	}
	read.Wait()
	close(confirm)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	waits, sets := primary.CommandCalls(t, "wait"), primary.CommandCalls(t, "set")
	t.Logf("%d concurrent reads: %d WAIT, %d SET on the primary", reads, waits, sets)
	if waits > 5 || sets > 5 || waits < 1 {
		t.Errorf("%d concurrent reads made %d WAITs and %d SETs; want 1 to 5 of each", reads, waits, sets)
	}
}

// TestBarrierOutlivesItsFirstRead: a read whose barrier is in flight leaves at its deadline with
// an error, and the read that shares the barrier is still confirmed once the replica answers: the
// barrier runs on the store's context until the latest member's deadline, not on the first's.
// The replica is frozen (SIGSTOP) so that the barriers stay in flight.
func TestBarrierOutlivesItsFirstRead(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	s := storetest.StoreOn(t, primary.Addr, store.Options{AckReplicas: 1})
	t.Cleanup(s.Close)
	replica.Signal(syscall.SIGSTOP)
	defer replica.Signal(syscall.SIGCONT)

	// A barrier in flight, so that the two reads below queue for the next one together.
	ctx0, cancel0 := context.WithTimeout(context.Background(), time.Second)
	defer cancel0()
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.ConfirmRead(ctx0, "p") }() // exits by ctx0's deadline
	awaitBlockedWaits(t, primary, 1)

	short, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	long, cancelLong := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelLong()
	leaving, staying := make(chan error, 1), make(chan error, 1)
	go func() { leaving <- s.ConfirmRead(short, "p") }() // exits by short's deadline
	// Leaving joins first, so the queued barrier is its call: run on its context, the barrier
	// would end when it leaves. (Were the order reversed, the test would still pass, not fail.)
	time.Sleep(10 * time.Millisecond)
	go func() { staying <- s.ConfirmRead(long, "p") }() // exits when the replica confirms, by long's deadline

	if err := <-firstDone; !errors.Is(err, store.ErrReadNotReplicated) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read with the replica frozen: %v; want not replicated or its deadline", err)
	}
	if err := <-leaving; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read past its deadline: %v; want %v", err, context.DeadlineExceeded)
	}
	awaitBlockedWaits(t, primary, 1) // the shared barrier still waits for the replica
	replica.Signal(syscall.SIGCONT)
	if err := <-staying; err != nil {
		t.Errorf("the read that shared the barrier: %v; want confirmed once the replica is back", err)
	}
}

// awaitBlockedWaits waits until n clients of server are blocked (a WAIT for the frozen replica).
func awaitBlockedWaits(t *testing.T, server *redistest.Server, n int) {
	t.Helper()
	want := "blocked_clients:" + strconv.Itoa(n)
	poll.Until(t, 5*time.Second, want, func() bool {
		info, err := server.Do("INFO", "clients")
		text, _ := info.(string)
		return err == nil && strings.Contains(text, want+"\r\n")
	})
}

// TestClusterReadsShareEachMastersBarriers: on a Cluster a read is confirmed on every master that
// serves one of its posts, and the reads of an interval share each master's barriers: 60
// concurrent reads of posts spread over several masters cost each master a handful of WAITs.
func TestClusterReadsShareEachMastersBarriers(t *testing.T) {
	c := redistest.StartClusterWithReplicas(t, 3, 1) // redis-cli creates no fewer masters
	rdb := c.Client(t)
	s := store.New(rdb, storetest.Keys, store.Options{Cluster: true, AckReplicas: 1, ReadBarrierGap: readGap})
	t.Cleanup(s.Close)
	posts := []string{"a", "b", "c", "d", "e", "f"}
	served := map[string]bool{}
	for _, p := range posts {
		served[c.NodeFor(storetest.Keys.PostReadBarrier(p)).Addr] = true
	}
	if len(served) < 2 {
		t.Fatalf("posts %v on %d masters; want several", posts, len(served))
	}
	masters := c.Masters()
	for _, m := range masters {
		if _, err := m.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
	}
	const reads = 60
	var wg sync.WaitGroup
	errs := make(chan error, reads)
	start := make(chan struct{})
	for range reads {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			<-start
			errs <- s.ConfirmRead(ctx, posts...)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	maxWaits := min(int64(took/readGap)+1, reads/4)
	for _, m := range masters {
		waits := m.CommandCalls(t, "wait")
		t.Logf("master %s (serves the posts: %v): %d WAITs for %d reads in %s", m.Addr, served[m.Addr], waits, reads, took)
		if !served[m.Addr] {
			if waits != 0 {
				t.Errorf("master %s serves none of the posts and ran %d WAITs; want none", m.Addr, waits)
			}
			continue
		}
		if waits < 1 || waits > maxWaits {
			t.Errorf("master %s: %d WAITs for %d concurrent reads in %s; want 1 to %d", m.Addr, waits, reads, took, maxWaits)
		}
	}
}
