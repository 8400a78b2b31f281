package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/testkit/likehistory"
)

// TestHistoryIsLinearizable: clients like, unlike and read a few posts at once through a real
// writer, and the recorded history, with a final read of every post's count and likers, passes the
// linearizability check of likehistory. It is the fault-free baseline of the check the fault
// suites run: the writer's answers (a like's count, "liked", a read's count and set) must be
// explained by one order of the operations.
func TestHistoryIsLinearizable(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	rec := likehistory.NewRecorder()
	cl := likehistory.Client{URL: w.URL, HTTP: w.Client}
	posts, users := []string{"h1", "h2", "h3"}, []string{"a", "b", "c", "d", "e"}
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() { // exits after its operations
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(c), 42))
			for range 60 {
				post, user := posts[rnd.IntN(len(posts))], users[rnd.IntN(len(users))]
				switch rnd.IntN(5) {
				case 0, 1:
					rec.Record(cl.Change(rec, c, likehistory.Like, post, user))
				case 2, 3:
					rec.Record(cl.Change(rec, c, likehistory.Unlike, post, user))
				default:
					rec.Record(cl.Read(rec, c, likehistory.Count, post))
				}
			}
		}()
	}
	wg.Wait()
	for _, post := range posts {
		rec.Record(cl.Read(rec, 6, likehistory.Count, post))
		rec.Record(cl.Read(rec, 6, likehistory.Likers, post))
	}
	ops := rec.Ops()
	if r := likehistory.Check(ops, time.Minute); !r.OK {
		t.Errorf("%d operations: %s", len(ops), r.Why)
		path := filepath.Join("..", ".run", "history-"+t.Name()+".html") // kept for CI's artefacts
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil && r.Visualize(path) == nil {
			t.Logf("the history, visualised: %s", path)
		}
	}
}
