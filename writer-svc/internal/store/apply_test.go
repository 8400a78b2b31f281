package store_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestApplyIsOneByOne: a batch with repeats, likes and unlikes of the same users gives each
// change the result it would have had alone, in order; it is stored and published once.
func TestApplyIsOneByOne(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	msgs := storetest.Subscribe(t, rdb, storetest.Keys.Channel("p"))
	L := func(u string) store.Change { return store.Change{User: u} }
	U := func(u string) store.Change { return store.Change{User: u, Unlike: true} }
	steps := []struct {
		give store.Change
		want store.Result
	}{
		{L("a"), store.Result{Count: 1, Changed: true}},
		{L("a"), store.Result{Count: 1, Changed: false}},
		{U("a"), store.Result{Count: 0, Changed: true}},
		{U("a"), store.Result{Count: 0, Changed: false}},
		{L("a"), store.Result{Count: 1, Changed: true}},
		{L("b"), store.Result{Count: 2, Changed: true}},
		{U("c"), store.Result{Count: 2, Changed: false}},
		{L("c"), store.Result{Count: 3, Changed: true}},
		{U("b"), store.Result{Count: 2, Changed: true}},
	}
	batch := make([]store.Change, len(steps))
	for i, st := range steps {
		batch[i] = st.give
	}
	got, err := s.Apply(ctx, "p", batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		if got[i] != st.want {
			t.Errorf("change %d %+v: got %+v; want %+v", i, st.give, got[i], st.want)
		}
	}
	for user, want := range map[string]int64{"a": 1, "b": 0, "c": 1} {
		if n := rdb.Exists(ctx, storetest.Keys.User("p", user)).Val(); n != want {
			t.Errorf("dedup key of %s: exists %d; want %d", user, n, want)
		}
	}
	u, err := update.Parse([]byte(storetest.Receive(t, msgs).Payload))
	if err != nil || u.Count != 2 {
		t.Fatalf("published %+v, %v; want one update with the final count 2", u, err)
	}
	if ver, _ := rdb.Get(ctx, storetest.Keys.Version("p")).Int64(); ver != u.TS {
		t.Errorf("version %d; want the published ts %d (one bump per batch)", ver, u.TS)
	}

	// A batch that changes nothing writes and publishes nothing; the next change's update is
	// the next message.
	if got, err := s.Apply(ctx, "p", []store.Change{L("a"), U("zz"), L("c")}); err != nil || got[0] != (store.Result{Count: 2, Changed: false}) || got[2] != (store.Result{Count: 2, Changed: false}) {
		t.Fatalf("batch of repeats: %+v, %v; want count 2 unchanged", got, err)
	}
	if ver, _ := rdb.Get(ctx, storetest.Keys.Version("p")).Int64(); ver != u.TS {
		t.Errorf("version %d after a batch of repeats; want %d unchanged", ver, u.TS)
	}
	if _, err := s.Like(ctx, "p", "d"); err != nil {
		t.Fatal(err)
	}
	if next, _ := update.Parse([]byte(storetest.Receive(t, msgs).Payload)); next.Count != 3 || next.TS <= u.TS {
		t.Errorf("next update %+v; want count 3 after ts %d", next, u.TS)
	}
}

// TestApplyLikesOnly covers both ways a batch of likes is stored: all new users (one MSETNX),
// and a batch with a user who had liked, or a user twice, which must store the others all the
// same.
func TestApplyLikesOnly(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	steps := []struct {
		name string
		give []string
		want []store.Result
	}{
		{"new users", []string{"x", "y"}, []store.Result{{Count: 1, Changed: true}, {Count: 2, Changed: true}}},
		{"one had liked", []string{"z", "x", "w"}, []store.Result{{Count: 3, Changed: true}, {Count: 3, Changed: false}, {Count: 4, Changed: true}}},
		{"one user twice", []string{"v", "v"}, []store.Result{{Count: 5, Changed: true}, {Count: 5, Changed: false}}},
	}
	for _, st := range steps {
		batch := make([]store.Change, len(st.give))
		for i, u := range st.give {
			batch[i] = store.Change{User: u}
		}
		got, err := s.Apply(ctx, "p", batch)
		if err != nil || !slices.Equal(got, st.want) {
			t.Errorf("%s: got %+v, %v; want %+v", st.name, got, err, st.want)
		}
	}
	if n := storetest.CountKeys(t, rdb, storetest.Keys.User("p", "*")); n != 5 {
		t.Errorf("%d dedup storetest.Keys; want 5", n)
	}
	if n, err := s.Count(ctx, "p"); err != nil || n != 5 {
		t.Errorf("count %d, %v; want 5", n, err)
	}
}

// TestApplyLargestBatch: store.MaxBatch changes fit in one call (Lua's unpack limit), one more is
// refused before anything is written.
func TestApplyLargestBatch(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	batch := make([]store.Change, store.MaxBatch)
	for i := range batch {
		batch[i] = store.Change{User: "u" + strconv.Itoa(i)}
	}
	got, err := s.Apply(ctx, "p", batch)
	if err != nil {
		t.Fatal(err)
	}
	if got[store.MaxBatch-1] != (store.Result{Count: store.MaxBatch, Changed: true}) {
		t.Errorf("last like: %+v; want count %d changed", got[store.MaxBatch-1], store.MaxBatch)
	}
	for i := range batch {
		batch[i].Unlike = true
	}
	if got, err := s.Apply(ctx, "p", batch); err != nil || got[store.MaxBatch-1] != (store.Result{Count: 0, Changed: true}) {
		t.Fatalf("unlike all: last %+v, %v; want count 0 changed", got[len(got)-1], err)
	}
	if n := storetest.CountKeys(t, rdb, storetest.Keys.User("p", "*")); n != 0 {
		t.Errorf("%d dedup storetest.Keys after unliking all; want 0", n)
	}
	if _, err := s.Apply(ctx, "p", append(batch, store.Change{User: "one-more"})); err == nil {
		t.Error("a batch of store.MaxBatch+1: got nil error")
	}
	if n := rdb.Exists(ctx, storetest.Keys.User("p", "one-more")).Val(); n != 0 {
		t.Error("a refused batch wrote a dedup key")
	}
}
