package store_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/writer-svc/internal/store"
	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestScriptWireFormat pins the like script's wire format, the one contract between Store and the
// script (a change of the contract extends this test, not another): KEYS and ARGV laid out as
// store.ChangeScript documents them, the reply {count before the batch, one flag per change, the chunk, the
// reactions' results, the version, the rate limit buckets' waits}, reactions gated per user and
// published with the count, likes and unlikes refused by their address's bucket, the batch key a
// run leaves behind, a re-run of the same batch answering the first run's reply and changing
// nothing, and the DEADLINE refusal that changes nothing.
// batchKeyForm is a batch key's value for a batch of likes only:
// "<count>|<flags>|<no reactions>|<version>|<no buckets>".
var batchKeyForm = regexp.MustCompile(`^0\|111\|\|[1-9][0-9]*\|$`)

func TestScriptWireFormat(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := store.ChangeScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Minute).UnixMilli()
	past := time.Now().Add(-time.Second).UnixMilli()
	type reaction struct{ user, kind string }
	// limited: every change of a batch spends a token of one address's bucket, 2 a minute.
	const bucket, interval, burst = "rl:addr", int64(time.Minute / time.Microsecond), 2
	run := func(batch, ops string, deadline int64, users []string, limited bool, reactions ...reaction) ([]any, error) {
		k := []string{storetest.Keys.Count("p"), storetest.Keys.Version("p"), storetest.Keys.Channel("p"), storetest.Keys.Batch("p", batch),
			storetest.Keys.LikersChunk("p"), storetest.Keys.Likers("p", 0), storetest.Keys.Likers("p", 1)}
		args := []any{"p", "PUBLISH", ops, deadline, 0, 0}
		for _, u := range users {
			k = append(k, storetest.Keys.User("p", u))
			args = append(args, u)
		}
		for _, u := range users {
			k = append(k, storetest.Keys.UserLikes(u))
		}
		k = append(k, storetest.Keys.Reactions("p"))
		args = append(args, "1", len(reactions), 3000)
		for _, r := range reactions {
			k = append(k, storetest.Keys.ReactionGate("p", r.user))
			args = append(args, r.kind)
		}
		if !limited {
			return store.ChangeScript.EvalSha(ctx, rdb, k, append(args, 0)...).Slice()
		}
		k = append(k, bucket)
		args = append(args, 1, interval, burst, strconv.Itoa(len(users))+" 1 0")
		return store.ChangeScript.EvalSha(ctx, rdb, k, args...).Slice()
	}
	msgs := storetest.Subscribe(t, rdb, storetest.Keys.Channel("p"))
	steps := []struct {
		name      string
		batch     string
		ops       string
		deadline  int64
		users     []string
		limited   bool
		reactions []reaction
		want      []any  // the count before and the flags
		wantRx    string // the reactions' results, a prefix of them when refused (the wait varies)
		wantErr   string // prefix of the error reply
		wantCount string // the count key afterwards
		wantLiked []string
		wantPub   string // the payload published, its version replaced by V; "" for none
	}{
		{"a batch", "b1", "LLU", future, []string{"a", "b", "a"}, false, nil, []any{int64(0), "111"}, "", "", "1", []string{"b"},
			`{"post_id":"p","count":1,"ts":V}`},
		{"the same batch again", "b1", "LLU", future, []string{"a", "b", "a"}, false, nil, []any{int64(0), "111"}, "", "", "1", []string{"b"}, ""},
		{"a new batch", "b2", "LUL", future, []string{"b", "c", "c"}, false, nil, []any{int64(1), "001"}, "", "", "2", []string{"b", "c"},
			`{"post_id":"p","count":2,"ts":V}`},
		{"past its deadline", "b3", "LU", past, []string{"d", "b"}, false, nil, nil, "", "DEADLINE ", "2", []string{"b", "c"}, ""},
		{"a re-run after the deadline", "b2", "LUL", past, []string{"b", "c", "c"}, false, nil, []any{int64(1), "001"}, "", "", "2", []string{"b", "c"}, ""},
		{"reactions only, one refused by its gate", "b4", "", future, nil, false, []reaction{{"a", "clap"}, {"b", "clap"}, {"a", "wow"}},
			[]any{int64(2), ""}, "1,2,-", "", "2", []string{"b", "c"}, `{"post_id":"p","count":2,"ts":V,"reactions":{"clap":2}}`},
		{"reactions again, all refused", "b5", "", future, nil, false, []reaction{{"b", "wow"}},
			[]any{int64(2), ""}, "-", "", "2", []string{"b", "c"}, ""},
		{"a like and a reaction", "b6", "L", future, []string{"d"}, false, []reaction{{"c", "boo"}},
			[]any{int64(2), "1"}, "1", "", "3", []string{"b", "c", "d"}, `{"post_id":"p","count":3,"ts":V,"reactions":{"boo":1,"clap":2}}`},
		{"reactions re-run", "b4", "", future, nil, false, []reaction{{"a", "clap"}, {"b", "clap"}, {"a", "wow"}},
			[]any{int64(2), ""}, "1,2,-", "", "3", []string{"b", "c", "d"}, ""},
		{"a reaction past its deadline", "b7", "", past, nil, false, []reaction{{"e", "clap"}}, nil, "", "DEADLINE ", "3", []string{"b", "c", "d"}, ""},
		{"likes past their address's burst", "b8", "LLL", future, []string{"e", "f", "g"}, true, nil, []any{int64(3), "11a", ""}, "", "", "5",
			[]string{"b", "c", "d", "e", "f"}, `{"post_id":"p","count":5,"ts":V,"reactions":{"boo":1,"clap":2}}`},
		{"the same batch again", "b8", "LLL", future, []string{"e", "f", "g"}, true, nil, []any{int64(3), "11a", ""}, "", "", "5",
			[]string{"b", "c", "d", "e", "f"}, ""},
		{"an unlike refused by its address's bucket", "b9", "U", future, []string{"e"}, true, nil, []any{int64(5), "a"}, "", "", "5",
			[]string{"b", "c", "d", "e", "f"}, ""},
	}
	for _, st := range steps {
		got, err := run(st.batch, st.ops, st.deadline, st.users, st.limited, st.reactions...)
		switch {
		case st.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), st.wantErr)):
			t.Errorf("%s: got %v, %v; want an error reply %q...", st.name, got, err, st.wantErr)
		case st.wantErr == "" && (err != nil || len(got) != 7 || got[0] != st.want[0] || got[1] != st.want[1] || got[6] != ""):
			t.Errorf("%s: got %#v, %v; want %#v and a chunk, reactions, a version, buckets and no state (published)", st.name, got, err, st.want)
		case st.wantErr == "":
			if rx, _ := got[3].(string); !strings.HasPrefix(rx, st.wantRx) || (!strings.HasSuffix(st.wantRx, "-") && rx != st.wantRx) {
				t.Errorf("%s: reactions %q; want %q", st.name, rx, st.wantRx)
			}
			// The bucket gave its two tokens at b8: empty for one interval from then (a re-run
			// answers that run's figure), a little less by b9; a batch without buckets answers none.
			w, _ := got[5].(string)
			us, _ := strconv.ParseInt(w, 10, 64)
			switch {
			case !st.limited && w != "":
				t.Errorf("%s: buckets %q; want none", st.name, w)
			case st.limited && st.batch == "b8" && us != interval:
				t.Errorf("%s: buckets %q; want %d (one interval)", st.name, w, interval)
			case st.limited && (us <= 0 || us > interval):
				t.Errorf("%s: buckets %q; want within one interval", st.name, w)
			}
		}
		if n, _ := rdb.Get(ctx, storetest.Keys.Count("p")).Result(); n != st.wantCount {
			t.Errorf("%s: count %q; want %q", st.name, n, st.wantCount)
		}
		for _, u := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			liked := rdb.Exists(ctx, storetest.Keys.User("p", u)).Val() == 1
			listed := rdb.LPos(ctx, storetest.Keys.Likers("p", 0), u, redis.LPosArgs{}).Err() == nil
			indexed := rdb.ZScore(ctx, storetest.Keys.UserLikes(u), "p").Err() == nil
			if want := slices.Contains(st.wantLiked, u); liked != want || listed != want || indexed != want {
				t.Errorf("%s: %s liked %v, in likers chunk 0 %v, in the user's index %v; want %v", st.name, u, liked, listed, indexed, want)
			}
		}
		if st.wantPub != "" {
			ver := rdb.Get(ctx, storetest.Keys.Version("p")).Val()
			if m := storetest.Receive(t, msgs); m.Payload != strings.Replace(st.wantPub, "V", ver, 1) {
				t.Errorf("%s: published %s; want %s", st.name, m.Payload, st.wantPub)
			}
		}
	}
	select {
	case m := <-msgs:
		t.Errorf("a batch that changed nothing published %s", m.Payload)
	default: // every publish of the steps was received above, in order: an extra one would be queued
	}
	// A refused reaction's wait is its gate's PTTL: within the 3 s interval the test passed.
	if ttl := rdb.PTTL(ctx, storetest.Keys.ReactionGate("p", "a")).Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("gate of a: PTTL %v; want within the 3s interval", ttl)
	}
	// A run leaves "<count before> <flags> <reactions>" under its batch key until a second past
	// its deadline; a refused batch leaves nothing.
	if v, err := rdb.Get(ctx, storetest.Keys.Batch("p", "b1")).Result(); err != nil || !batchKeyForm.MatchString(v) {
		t.Errorf("batch key b1: %q, %v; want %q", v, err, "0|111||<version>|")
	}
	// The bucket holds its TAT, two intervals past b8's run, and expires when it would be full.
	if ttl := rdb.PTTL(ctx, bucket).Val(); ttl <= time.Minute || ttl > 2*time.Minute {
		t.Errorf("bucket: PTTL %v; want within 1 to 2 intervals", ttl)
	}
	exp, err := rdb.PExpireTime(ctx, storetest.Keys.Batch("p", "b1")).Result()
	if want := time.Duration(future+1000) * time.Millisecond; err != nil || exp != want {
		t.Errorf("batch key b1 expires at %v, %v; want %v (the deadline + 1s)", exp, err, want)
	}
	if n := rdb.Exists(ctx, storetest.Keys.Batch("p", "b3")).Val(); n != 0 {
		t.Error("a refused batch left a batch key")
	}

	// ARGV[a+2q+2], after the buckets' runs: the empty post's expiry in milliseconds. A batch that
	// leaves post e at count 0 with no reactions sets its count and version to expire; one that
	// likes it again clears their expiry. Absent (as above) or 0, nothing expires.
	const ttl = 60000
	runE := func(batch, ops string) {
		t.Helper()
		k := []string{storetest.Keys.Count("e"), storetest.Keys.Version("e"), storetest.Keys.Channel("e"), storetest.Keys.Batch("e", batch),
			storetest.Keys.LikersChunk("e"), storetest.Keys.Likers("e", 0), storetest.Keys.Likers("e", 1),
			storetest.Keys.User("e", "a"), storetest.Keys.UserLikes("a"), storetest.Keys.Reactions("e")}
		args := []any{"e", "PUBLISH", ops, future, 0, 0, "a", "1", 0, 3000, 0, "", ttl}
		if _, err := store.ChangeScript.EvalSha(ctx, rdb, k, args...).Slice(); err != nil {
			t.Fatalf("batch %s on e: %v", batch, err)
		}
	}
	checkE := func(what string, expiring bool) {
		t.Helper()
		for _, key := range []string{storetest.Keys.Count("e"), storetest.Keys.Version("e")} {
			pttl := rdb.PTTL(ctx, key).Val()
			if expiring && (pttl <= 0 || pttl > ttl*time.Millisecond) || !expiring && pttl != -1 {
				t.Errorf("%s: %s PTTL %v; want expiring %v within %dms", what, key, pttl, expiring, ttl)
			}
		}
	}
	runE("e1", "L")
	checkE("liked", false)
	runE("e2", "U")
	checkE("liked then unliked", true)
	runE("e3", "L")
	checkE("liked again", false)
}

// TestResultsRejectsMalformedReply: a reply of the wrong shape is an error, never a panic in the
// flusher that reads it.
func TestResultsRejectsMalformedReply(t *testing.T) {
	two := []store.Change{{User: "a"}, {User: "b", Unlike: true}}
	v := int64(1764700000000000)
	gates := []int{1, 2, 1, 0} // a: its address's bucket 1 and its own 2; b: the address's only
	tests := []struct {
		name      string
		give      []any
		reactions int
		gates     []int
	}{
		{"nil", nil, 0, nil},
		{"empty", []any{}, 0, nil},
		{"count only", []any{int64(3)}, 0, nil},
		{"no reactions", []any{int64(3), "11", int64(2), ""}, 0, nil},
		{"no version", []any{int64(3), "11", int64(2), "", ""}, 0, nil},
		{"no buckets", []any{int64(3), "11", int64(2), "", v}, 0, nil},
		{"no state", []any{int64(3), "11", int64(2), "", v, ""}, 0, nil},
		{"chunk not an integer", []any{int64(3), "11", "x", "", v, "", ""}, 0, nil},
		{"eight values", []any{int64(3), "11", int64(0), "", v, "", "", v}, 0, nil},
		{"count not an integer", []any{"3", "11", int64(0), "", v, "", ""}, 0, nil},
		{"flags not a string", []any{int64(3), int64(11), int64(0), "", v, "", ""}, 0, nil},
		{"too few flags", []any{int64(3), "1", int64(0), "", v, "", ""}, 0, nil},
		{"too many flags", []any{int64(3), "111", int64(0), "", v, "", ""}, 0, nil},
		{"version not an integer", []any{int64(3), "11", int64(0), "", "17", "", ""}, 0, nil},
		{"reactions not a string", []any{int64(3), "11", int64(0), int64(1), v, "", ""}, 1, nil},
		{"reactions for none", []any{int64(3), "11", int64(0), "4", v, "", ""}, 0, nil},
		{"too few reactions", []any{int64(3), "11", int64(0), "4", v, "", ""}, 2, nil},
		{"a reaction not a number", []any{int64(3), "11", int64(0), "4,x", v, "", ""}, 2, nil},
		{"buckets not a string", []any{int64(3), "11", int64(0), "", v, int64(0), ""}, 0, gates},
		{"buckets for none", []any{int64(3), "11", int64(0), "", v, "0", ""}, 0, nil},
		{"too few buckets", []any{int64(3), "11", int64(0), "", v, "0", ""}, 0, gates},
		{"a bucket not a number", []any{int64(3), "11", int64(0), "", v, "0,x", ""}, 0, gates},
		{"a negative wait", []any{int64(3), "11", int64(0), "", v, "0,-5", ""}, 0, gates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res, _, _, err := store.Results(tt.give, two, tt.reactions, tt.gates); err == nil || !store.Settled(err) {
				t.Errorf("store.Results(%#v) = %+v, %v; want a malformed-reply error", tt.give, res, err)
			}
		})
	}
	res, rx, cur, err := store.Results([]any{int64(3), "11", int64(2), "7,-1501", v, "", ""}, two, 2, nil)
	if err != nil || res[0] != (store.Result{Count: 4, Changed: true}) || res[1] != (store.Result{Count: 3, Changed: true}) || cur != 2 {
		t.Errorf("well-formed reply: %+v, chunk %d, %v; want counts 4 then 3, chunk 2", res, cur, err)
	}
	if want := []store.Result{{Count: 7, Changed: true, Version: v}, {RetryAfter: 1500 * time.Millisecond, Version: v}}; !slices.Equal(rx, want) {
		t.Errorf("well-formed reply's reactions: %+v; want %+v", rx, want)
	}
	if _, _, cur, err := store.Results([]any{int64(3), "11", int64(-1), "", v, "", ""}, two, 0, nil); err != nil || cur != -1 {
		t.Errorf("a re-run's reply: chunk %d, %v; want -1 (none)", cur, err)
	}
	// a liked; b's unlike refused by the address's bucket, empty for 2 ms after a's token.
	res, _, _, err = store.Results([]any{int64(3), "1a", int64(0), "", v, "2000,0", ""}, two, 0, gates)
	wantA := store.Result{Count: 4, Changed: true, Waits: [2]time.Duration{2 * time.Millisecond, 0}}
	wantB := store.Result{Count: 4, Limited: 1, RetryAfter: 2 * time.Millisecond, Waits: [2]time.Duration{2 * time.Millisecond, 0}}
	if err != nil || res[0] != wantA || res[1] != wantB {
		t.Errorf("a reply with buckets: %+v, %v; want %+v and %+v", res, err, wantA, wantB)
	}
}
