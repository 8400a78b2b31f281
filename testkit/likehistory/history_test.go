package likehistory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// at builds an operation of client c over [call, end].
func at(c int, call, end int64, op Op) Op {
	op.Client, op.Call, op.End = c, call, end
	return op
}

func like(post, user string, o Outcome, changed bool, count int64) Op {
	return Op{Kind: Like, Post: post, User: user, Outcome: o, Changed: changed, Count: count}
}

func unlike(post, user string, o Outcome, changed bool, count int64) Op {
	return Op{Kind: Unlike, Post: post, User: user, Outcome: o, Changed: changed, Count: count}
}

func count(post string, n int64) Op { return Op{Kind: Count, Post: post, Outcome: OK, Count: n} }

func likers(post string, users ...string) Op {
	return Op{Kind: Likers, Post: post, Outcome: OK, Users: users}
}

func TestCheckAcceptsWhatTheServiceMayAnswer(t *testing.T) {
	for name, h := range map[string][]Op{
		"sequential": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(0, 2, 3, like("p", "a", OK, false, 1)), // a retry is deduplicated
			at(1, 4, 5, like("p", "b", OK, true, 2)),
			at(0, 6, 7, unlike("p", "a", OK, true, 1)),
			at(2, 8, 9, count("p", 1)),
			at(2, 10, 11, likers("p", "b")),
		},
		"concurrent, either order": {
			at(0, 0, 10, like("p", "a", OK, true, 2)), // ran second
			at(1, 1, 9, like("p", "b", OK, true, 1)),  // ran first
			at(2, 11, 12, count("p", 2)),
		},
		"a refusal changed nothing": {
			at(0, 0, 1, like("p", "a", Fail, false, 0)),
			at(1, 2, 3, count("p", 0)),
		},
		"an unknown like that landed": {
			at(0, 0, 1, like("p", "a", Unknown, false, 0)),
			at(1, 5, 6, count("p", 1)),
		},
		"an unknown like that did not land": {
			at(0, 0, 1, like("p", "a", Unknown, false, 0)),
			at(1, 5, 6, likers("p")),
		},
		"posts are independent": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(1, 0, 1, like("q", "a", OK, true, 1)),
			at(2, 2, 3, count("q", 1)),
		},
	} {
		if r := Check(h, 10*time.Second); !r.OK {
			t.Errorf("%s: %s", name, r.Why)
		}
	}
}

// TestCheckCatchesWhatTheServiceMustNeverDo: each history breaks one promise, the kind of break a
// fault can cause (a writer that acknowledges before the replica has the like, then loses the
// primary; a 503 whose call lands later; a count out of step with its set).
func TestCheckCatchesWhatTheServiceMustNeverDo(t *testing.T) {
	for name, h := range map[string][]Op{
		"an acknowledged like lost": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(1, 2, 3, likers("p")),
		},
		"a refused like stored": {
			at(0, 0, 1, like("p", "a", Fail, false, 0)),
			at(1, 2, 3, count("p", 1)),
		},
		"a refused unlike applied": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(0, 2, 3, unlike("p", "a", Fail, false, 0)),
			at(1, 4, 5, likers("p")),
		},
		"a count out of step with its set": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(1, 2, 3, count("p", 1)),
			at(1, 4, 5, likers("p", "a", "b")),
		},
		"a like answered new twice": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(1, 2, 3, like("p", "a", OK, true, 2)),
		},
		"a stale read after an acknowledged like": {
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(1, 2, 3, count("p", 0)),
		},
	} {
		if r := Check(h, 10*time.Second); r.OK {
			t.Errorf("%s: passed the check", name)
		}
	}
}

// TestVisualizeWritesTheFailingHistory: a failing check's page names its operations.
func TestVisualizeWritesTheFailingHistory(t *testing.T) {
	r := Check([]Op{at(0, 0, 1, like("p", "a", OK, true, 1)), at(1, 2, 3, likers("p"))}, 10*time.Second)
	if r.OK {
		t.Fatal("a lost like passed")
	}
	path := filepath.Join(t.TempDir(), "history.html")
	if err := r.Visualize(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "like(p, a) ok changed=true count=1") {
		t.Errorf("the page does not describe the lost like")
	}
}

// TestRecorderKeepsEveryClientsOperations: operations recorded from many goroutines are all kept,
// each ending after its call.
func TestRecorderKeepsEveryClientsOperations(t *testing.T) {
	r := NewRecorder()
	done := make(chan struct{})
	for c := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				call := r.Now()
				r.Record(Op{Client: c, Kind: Count, Post: "p", Call: call, Outcome: OK})
			}
		}()
	}
	for range 8 {
		<-done
	}
	ops := r.Ops()
	if len(ops) != 800 {
		t.Fatalf("%d operations; want 800", len(ops))
	}
	for _, op := range ops {
		if op.End < op.Call {
			t.Fatalf("%+v ends before its call", op)
		}
	}
}

// TestShownCountsAreReadsWithinTheDeliveryBound: a count a viewer was shown is explained when the
// post had it at some moment of the bound before it arrived, and not when it never had it (a
// refused like shown) or had it only earlier than the bound (a viewer left behind).
func TestShownCountsAreReadsWithinTheDeliveryBound(t *testing.T) {
	const bound = 10 * time.Nanosecond
	shown := func(n, recv int64) Op { return ShownOp(Shown{Client: 100, Post: "p", Count: n, Recv: recv}, bound) }
	if op := shown(1, 4); op.Call != 0 || op.End != 4 || op.Kind != Count || op.Outcome != OK {
		t.Errorf("shown before the bound had passed: %+v; want a count read over [0, 4]", op)
	}
	for name, tc := range map[string]struct {
		h  []Op
		ok bool
	}{
		"shown while it was the count": {[]Op{at(0, 0, 1, like("p", "a", OK, true, 1)), shown(1, 3)}, true},
		"shown a little after the next change": {[]Op{
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(0, 20, 21, like("p", "b", OK, true, 2)),
			shown(1, 25), // count 1 until 20: within the bound of 25
		}, true},
		"an unknown like shown, later kept": {[]Op{
			at(0, 0, 1, like("p", "a", Unknown, false, 0)), shown(1, 5), at(1, 30, 31, count("p", 1)),
		}, true},
		"a refused like shown": {[]Op{at(0, 0, 1, like("p", "a", Fail, false, 0)), shown(1, 5)}, false},
		"an unknown like shown, then lost": {[]Op{
			at(0, 0, 1, like("p", "a", Unknown, false, 0)), shown(1, 5), at(1, 30, 31, count("p", 0)),
		}, false},
		"shown a count older than the bound": {[]Op{
			at(0, 0, 1, like("p", "a", OK, true, 1)),
			at(0, 20, 21, like("p", "b", OK, true, 2)),
			shown(1, 40), // count 1 ended by 21, more than 10 before 40
		}, false},
	} {
		if r := Check(tc.h, 10*time.Second); r.OK != tc.ok {
			t.Errorf("%s: check OK = %v (%s); want %v", name, r.OK, r.Why, tc.ok)
		}
	}
}
