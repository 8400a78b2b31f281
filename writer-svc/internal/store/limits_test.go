package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/likes/likes/writer-svc/internal/ratelimit"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestLimitRunsSpendInOrder: the script spends a run of changes on one bucket in one step
// (takeRun); each change still gets what it would have had with the tokens taken one at a time,
// in the batch's order: a bucket that runs dry refuses the rest of its run and every later run
// on it, another bucket between them is spent on its own, and a run on the user's bucket alone
// refuses with that bucket's number.
func TestLimitRunsSpendInOrder(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	rate := func(spec string) ratelimit.Rate {
		r, err := ratelimit.ParseRate(spec)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	addrs := ratelimit.New(rdb, storetest.Keys, rate("5/1m burst 5"))
	users := ratelimit.New(rdb, storetest.Keys, rate("2/1m burst 2"))
	take := func(l *ratelimit.Limiter, id string) ratelimit.Bucket {
		b, wait := l.Take(id)
		if wait > 0 {
			t.Fatalf("bucket %s refused before any call", id)
		}
		return b
	}
	a, b, u := take(addrs, "a"), take(addrs, "b"), take(users, "u")
	var changes []store.Change
	var want []int // Limited, per change
	add := func(n int, limits [2]ratelimit.Bucket, limited ...int) {
		for i := range n {
			changes = append(changes, store.Change{User: "user-" + strconv.Itoa(len(changes)), Limits: limits})
			want = append(want, limited[min(i, len(limited)-1)])
		}
	}
	add(8, [2]ratelimit.Bucket{a}, 0, 0, 0, 0, 0, 1) // 5 tokens, then refused
	add(2, [2]ratelimit.Bucket{b}, 0)                // another address: its own tokens
	add(2, [2]ratelimit.Bucket{a}, 1)                // a again: still dry
	add(3, [2]ratelimit.Bucket{{}, u}, 0, 0, 2)      // the user's bucket alone: 2 tokens
	add(1, [2]ratelimit.Bucket{}, 0)                 // no limit
	res, err := s.Apply(ctx, "p", changes)
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for i, r := range res {
		if r.Limited != want[i] || r.Changed != (want[i] == 0) || (r.Limited != 0) != (r.RetryAfter > 0) {
			t.Errorf("change %d: %+v; want Limited %d", i, r, want[i])
		}
		if r.Changed {
			stored++
		}
	}
	if n, err := s.Count(ctx, "p"); err != nil || n != int64(stored) || stored != 10 {
		t.Errorf("count %d, %v, %d changes stored; want 10 and the count equal", n, err, stored)
	}
	for _, bucket := range []ratelimit.Bucket{a, b, u} {
		bucket.Settle(0)
	}
}
