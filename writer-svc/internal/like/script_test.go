package like

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/pkg/redistest"
)

// TestScriptWireFormat pins the like script's wire format, the one contract between Store and the
// script (issues 19 and 20 extend this test, not another): KEYS and ARGV laid out as changeScript
// documents them, the reply {count before the batch, one flag per change}, the batch key a run
// leaves behind, a re-run of the same batch answering the first run's reply and changing nothing,
// and the DEADLINE refusal that changes nothing.
func TestScriptWireFormat(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := changeScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute).UnixMilli()
	past := time.Now().Add(-time.Second).UnixMilli()
	run := func(batch, ops string, deadline int64, users ...string) ([]any, error) {
		k := []string{keys.Count("p"), keys.Version("p"), keys.Channel("p"), keys.Batch("p", batch),
			keys.LikersChunk("p"), keys.Likers("p", 0), keys.Likers("p", 1)}
		args := []any{"p", "PUBLISH", ops, deadline, 0, 0}
		for _, u := range users {
			k = append(k, keys.User("p", u))
			args = append(args, u)
		}
		for _, u := range users {
			k = append(k, keys.UserLikes(u))
		}
		return changeScript.EvalSha(ctx, rdb, k, append(args, "1")...).Slice()
	}
	steps := []struct {
		name      string
		batch     string
		ops       string
		deadline  int64
		users     []string
		want      []any
		wantErr   string // prefix of the error reply
		wantCount string // the count key afterwards
		wantLiked []string
	}{
		{"a batch", "b1", "LLU", future, []string{"a", "b", "a"}, []any{int64(0), "111"}, "", "1", []string{"b"}},
		{"the same batch again", "b1", "LLU", future, []string{"a", "b", "a"}, []any{int64(0), "111"}, "", "1", []string{"b"}},
		{"a new batch", "b2", "LUL", future, []string{"b", "c", "c"}, []any{int64(1), "001"}, "", "2", []string{"b", "c"}},
		{"past its deadline", "b3", "LU", past, []string{"d", "b"}, nil, "DEADLINE ", "2", []string{"b", "c"}},
		{"a re-run after the deadline", "b2", "LUL", past, []string{"b", "c", "c"}, []any{int64(1), "001"}, "", "2", []string{"b", "c"}},
	}
	for _, st := range steps {
		got, err := run(st.batch, st.ops, st.deadline, st.users...)
		switch {
		case st.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), st.wantErr)):
			t.Errorf("%s: got %v, %v; want an error reply %q...", st.name, got, err, st.wantErr)
		case st.wantErr == "" && (err != nil || len(got) < 2 || got[0] != st.want[0] || got[1] != st.want[1]):
			t.Errorf("%s: got %#v, %v; want %#v", st.name, got, err, st.want)
		}
		if n, _ := rdb.Get(ctx, keys.Count("p")).Result(); n != st.wantCount {
			t.Errorf("%s: count %q; want %q", st.name, n, st.wantCount)
		}
		for _, u := range []string{"a", "b", "c", "d"} {
			liked := rdb.Exists(ctx, keys.User("p", u)).Val() == 1
			listed := rdb.LPos(ctx, keys.Likers("p", 0), u, redis.LPosArgs{}).Err() == nil
			indexed := rdb.ZScore(ctx, keys.UserLikes(u), "p").Err() == nil
			if want := slices.Contains(st.wantLiked, u); liked != want || listed != want || indexed != want {
				t.Errorf("%s: %s liked %v, in likers chunk 0 %v, in the user's index %v; want %v", st.name, u, liked, listed, indexed, want)
			}
		}
	}
	// A run leaves "<count before> <flags>" under its batch key until a second past its deadline;
	// a refused batch leaves nothing.
	if v, err := rdb.Get(ctx, keys.Batch("p", "b1")).Result(); err != nil || v != "0 111" {
		t.Errorf("batch key b1: %q, %v; want %q", v, err, "0 111")
	}
	exp, err := rdb.PExpireTime(ctx, keys.Batch("p", "b1")).Result()
	if want := time.Duration(future+1000) * time.Millisecond; err != nil || exp != want {
		t.Errorf("batch key b1 expires at %v, %v; want %v (the deadline + 1s)", exp, err, want)
	}
	if n := rdb.Exists(ctx, keys.Batch("p", "b3")).Val(); n != 0 {
		t.Error("a refused batch left a batch key")
	}
}

// TestResultsRejectsMalformedReply: a reply of the wrong shape is an error, never a panic in the
// flusher that reads it.
func TestResultsRejectsMalformedReply(t *testing.T) {
	two := []Change{{User: "a"}, {User: "b", Unlike: true}}
	tests := []struct {
		name string
		give []any
	}{
		{"nil", nil},
		{"empty", []any{}},
		{"count only", []any{int64(3)}},
		{"chunk not an integer", []any{int64(3), "11", "x"}},
		{"four values", []any{int64(3), "11", int64(0), int64(0)}},
		{"count not an integer", []any{"3", "11"}},
		{"flags not a string", []any{int64(3), int64(11)}},
		{"too few flags", []any{int64(3), "1"}},
		{"too many flags", []any{int64(3), "111"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res, _, err := results(tt.give, two); err == nil || !settled(err) {
				t.Errorf("results(%#v) = %+v, %v; want a malformed-reply error", tt.give, res, err)
			}
		})
	}
	if res, cur, err := results([]any{int64(3), "11", int64(2)}, two); err != nil || res[0] != (Result{4, true}) || res[1] != (Result{3, true}) || cur != 2 {
		t.Errorf("well-formed reply: %+v, chunk %d, %v; want counts 4 then 3, chunk 2", res, cur, err)
	}
	if _, cur, err := results([]any{int64(3), "11"}, two); err != nil || cur != -1 {
		t.Errorf("a re-run's reply: chunk %d, %v; want -1 (none)", cur, err)
	}
}
