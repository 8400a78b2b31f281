package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeBarrier is a barrierCall that blocks until the test releases it, so that a test decides when
// each barrier ends (a fake that answered at once would never show a read arriving mid-barrier).
type fakeBarrier struct {
	mu      sync.Mutex
	started int   // calls sent
	ctxErr  error // the running call's context's error when it was released
	release chan error
}

func newFakeBarrier() *fakeBarrier { return &fakeBarrier{release: make(chan error)} }

func (f *fakeBarrier) call(ctx context.Context, _ time.Time, _ int) error {
	f.mu.Lock()
	f.started++
	f.mu.Unlock()
	select {
	case err := <-f.release:
		f.mu.Lock()
		f.ctxErr = ctx.Err()
		f.mu.Unlock()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeBarrier) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

// confirmAsync runs confirm in a goroutine (it exits when confirm returns) and returns its answer.
func confirmAsync(ctx context.Context, b *barriers, f *fakeBarrier) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.confirm(ctx, "primary", 1, f.call) }()
	return done
}

func answered(c <-chan error) bool { return len(c) > 0 }

// TestReadJoinsOnlyABarrierThatStartsAfterIt: a read that asks while a barrier is in flight is
// not confirmed by that barrier (its SET may predate what the read saw) but by the next, which
// starts only once the one in flight has ended and testGap has passed; the reads that queue
// meanwhile share that one call.
// testGap is the gap the group is built with here, to show that it holds (the store's default is
// none).
const testGap = 5 * time.Millisecond

func TestReadJoinsOnlyABarrierThatStartsAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		defer b.close()
		f := newFakeBarrier()
		first := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		if f.calls() != 1 {
			t.Fatalf("%d barriers after the first read; want 1, at once", f.calls())
		}
		var later []<-chan error
		for range 100 {
			later = append(later, confirmAsync(t.Context(), b, f))
		}
		synctest.Wait()
		if f.calls() != 1 {
			t.Fatalf("%d barriers with one in flight; want 1 (the others queue)", f.calls())
		}

		f.release <- nil
		synctest.Wait()
		if err := <-first; err != nil {
			t.Errorf("first read: %v; want confirmed by its barrier", err)
		}
		for i, c := range later {
			if answered(c) {
				t.Fatalf("read %d, which asked while the first barrier was in flight, was answered by it", i)
			}
		}
		if f.calls() != 1 {
			t.Fatalf("%d barriers before testGap has passed; want 1", f.calls())
		}

		time.Sleep(testGap)
		synctest.Wait()
		if f.calls() != 2 {
			t.Fatalf("%d barriers after the gap; want 2: the queued reads share one", f.calls())
		}
		for i, c := range later {
			if answered(c) {
				t.Fatalf("read %d answered before its barrier returned", i)
			}
		}
		f.release <- nil
		for i, c := range later {
			if err := <-c; err != nil {
				t.Errorf("read %d: %v; want confirmed by the second barrier", i, err)
			}
		}
	})
}

// TestQuietReadStartsItsBarrierAtOnce: once a barrier and its gap are over, the primary is idle
// and the next read's barrier starts at once, without waiting.
func TestQuietReadStartsItsBarrierAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		defer b.close()
		f := newFakeBarrier()
		c := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		f.release <- nil
		if err := <-c; err != nil {
			t.Fatal(err)
		}
		time.Sleep(testGap)
		synctest.Wait() // the runner has exited: no lane left
		start := time.Now()
		c = confirmAsync(t.Context(), b, f)
		synctest.Wait()
		if f.calls() != 2 || time.Since(start) != 0 {
			t.Fatalf("%d barriers %s after a quiet read; want 2, at once", f.calls(), time.Since(start))
		}
		f.release <- nil
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	})
}

// TestWaiterLeavesAtItsDeadlineOthersStay: a read whose request ends leaves with its context's
// error, without ending the barrier it shares: the call's context is the store's, and the other
// reads get its answer, success or failure alike.
func TestWaiterLeavesAtItsDeadlineOthersStay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		defer b.close()
		f := newFakeBarrier()
		// A barrier in flight, so that the two reads queue for the next one together.
		first := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		leaving := confirmAsync(short, b, f) // the next barrier's first read: its call is this one's
		synctest.Wait()
		staying := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		f.release <- nil
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		time.Sleep(testGap)
		synctest.Wait()
		if f.calls() != 2 {
			t.Fatalf("%d barriers; want 2", f.calls())
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if err := <-leaving; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("read past its deadline: %v; want %v", err, context.DeadlineExceeded)
		}
		if answered(staying) {
			t.Fatal("the other read was answered when the first left")
		}
		f.release <- nil
		if err := <-staying; err != nil {
			t.Errorf("the other read: %v; want confirmed", err)
		}
		if f.ctxErr != nil {
			t.Errorf("the shared call's context ended with the first read: %v", f.ctxErr)
		}

		// A failure is every member's.
		failed := errors.New("2 replicas short")
		time.Sleep(testGap)
		x := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		y, z := confirmAsync(t.Context(), b, f), confirmAsync(t.Context(), b, f)
		synctest.Wait()
		f.release <- nil
		if err := <-x; err != nil {
			t.Fatal(err)
		}
		time.Sleep(testGap)
		synctest.Wait()
		f.release <- failed
		for _, ch := range []<-chan error{y, z} {
			if err := <-ch; !errors.Is(err, failed) {
				t.Errorf("read of a failed barrier: %v; want %v", err, failed)
			}
		}
	})
}

// TestAbandonedBarrierIsNotSent: a queued barrier whose reads all left before it could start
// sends nothing (a primary whose replicas lag would otherwise get one WAIT per request timeout).
func TestAbandonedBarrierIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		defer b.close()
		f := newFakeBarrier()
		first := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		short, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		if err := b.confirm(short, "primary", 1, f.call); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued read past its deadline: %v", err)
		}
		f.release <- nil
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		time.Sleep(testGap)
		synctest.Wait()
		if f.calls() != 1 {
			t.Errorf("%d barriers; want 1: the queued one lost all its reads", f.calls())
		}
	})
}

// TestCloseEndsTheBarriers: Close gives up the call in flight (its reads get an error, not a
// hang), waits for the runner, and refuses reads after it.
func TestCloseEndsTheBarriers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		f := newFakeBarrier()
		inFlight := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		queued := confirmAsync(t.Context(), b, f)
		synctest.Wait()
		b.close()
		if err := <-inFlight; !errors.Is(err, context.Canceled) {
			t.Errorf("read of the barrier in flight at close: %v; want %v", err, context.Canceled)
		}
		if err := <-queued; !errors.Is(err, context.Canceled) {
			t.Errorf("read queued at close: %v; want %v", err, context.Canceled)
		}
		if err := b.confirm(t.Context(), "primary", 1, f.call); !errors.Is(err, errBarriersClosed) {
			t.Errorf("read after close: %v; want %v", err, errBarriersClosed)
		}
	})
}

// TestPrimariesHaveTheirOwnBarriers: a barrier in flight on one primary (a Cluster master) does
// not hold up a read on another.
func TestPrimariesHaveTheirOwnBarriers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBarriers(testGap)
		defer b.close()
		f, g := newFakeBarrier(), newFakeBarrier()
		one := confirmAsync(t.Context(), b, f)
		other := make(chan error, 1)
		go func() { other <- b.confirm(t.Context(), "other", 1, g.call) }()
		synctest.Wait()
		if f.calls() != 1 || g.calls() != 1 {
			t.Fatalf("barriers %d and %d; want one on each primary at once", f.calls(), g.calls())
		}
		g.release <- nil
		f.release <- nil
		if err := <-one; err != nil {
			t.Error(err)
		}
		if err := <-other; err != nil {
			t.Error(err)
		}
	})
}
