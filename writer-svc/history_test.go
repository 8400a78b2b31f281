package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/likes/likes/internal/likehistory"
)

// TestHistoryIsLinearizable: clients like, unlike and read a few posts at once through a real
// writer, and the recorded history, with a final read of every post's count and likers, passes the
// linearizability check of likehistory. It is the fault-free baseline of the check the fault
// suites run: the writer's answers (a like's count, "liked", a read's count and set) must be
// explained by one order of the operations.
func TestHistoryIsLinearizable(t *testing.T) {
	w := startWriter(t, nil, trustHeader)
	rec := likehistory.NewRecorder()
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
					rec.Record(historyChange(w, rec, c, likehistory.Like, post, user))
				case 2, 3:
					rec.Record(historyChange(w, rec, c, likehistory.Unlike, post, user))
				default:
					rec.Record(historyRead(w, rec, c, likehistory.Count, post))
				}
			}
		}()
	}
	wg.Wait()
	for _, post := range posts {
		rec.Record(historyRead(w, rec, 6, likehistory.Count, post))
		rec.Record(historyRead(w, rec, 6, likehistory.Likers, post))
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

// historyChange likes or unlikes post as user and returns the operation as the history has it.
func historyChange(w *testWriter, rec *likehistory.Recorder, client int, kind likehistory.Kind, post, user string) likehistory.Op {
	op := likehistory.Op{Client: client, Kind: kind, Post: post, User: user, Call: rec.Now()}
	method := http.MethodPost
	if kind == likehistory.Unlike {
		method = http.MethodDelete
	}
	var reply struct {
		Count int64 `json:"count"`
		Liked bool  `json:"liked"`
	}
	op.Outcome = historyDo(w, method, "/like/"+post, user, &reply)
	op.Count, op.Changed = reply.Count, reply.Liked
	return op
}

// historyRead reads post's count or its likers.
func historyRead(w *testWriter, rec *likehistory.Recorder, client int, kind likehistory.Kind, post string) likehistory.Op {
	op := likehistory.Op{Client: client, Kind: kind, Post: post, Call: rec.Now()}
	if kind == likehistory.Count {
		var reply struct {
			Count int64 `json:"count"`
		}
		op.Outcome = historyDo(w, http.MethodGet, "/count/"+post, "", &reply)
		op.Count = reply.Count
		return op
	}
	var reply struct {
		Users []struct {
			UserID string `json:"user_id"`
		} `json:"users"`
		NextCursor string `json:"next_cursor"`
	}
	op.Outcome = historyDo(w, http.MethodGet, "/likes/"+post+"/users?limit=100", "", &reply)
	op.Users = []string{}
	for _, u := range reply.Users {
		op.Users = append(op.Users, u.UserID)
	}
	if reply.NextCursor != "" {
		op.Outcome = likehistory.Unknown // more than one page: not a whole read
	}
	return op
}

// historyDo sends one request and reads its answer into reply: OK on a 200, Fail on a refusal, Unknown
// when no answer came.
func historyDo(w *testWriter, method, path, user string, reply any) likehistory.Outcome {
	req, err := http.NewRequest(method, w.URL+path, nil)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := w.Client.Do(req)
	if err != nil {
		return likehistory.Unknown
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return likehistory.Fail
	}
	if err := json.NewDecoder(resp.Body).Decode(reply); err != nil {
		return likehistory.Unknown
	}
	return likehistory.OK
}
