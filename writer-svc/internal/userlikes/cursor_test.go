package userlikes

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestForgedLikersCursorsAreBounded: a likers cursor with a number past MaxCursor is refused
// before any Redis work; one within it but past the post's chunks, or past its chunk's entries,
// reads like the page it stands for (the newest, or the chunk's top) in the round trips of one
// page, instead of walking down through chunks and ranks that hold nothing.
func TestForgedLikersCursorsAreBounded(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	rt := newRoundTrips()
	rdb.AddHook(rt.hook("single"))
	ctx := context.Background()
	rd := NewReader(rdb, storetest.Keys, 100)
	storetest.LikeBatches(t, s, "p", "u", 100, 100, 100) // chunks 0 to 2
	for _, c := range []string{"9223372036854775807", "4294967296", "1.4294967296", "4294967296.1", "-9223372036854775808", "1.-1", "١", "1e3", "0x1"} {
		rt.reset()
		if _, _, _, err := rd.Likers(ctx, "p", c, 10); !errors.Is(err, ErrCursor) {
			t.Errorf("cursor %q: %v; want ErrCursor", c, err)
		}
		if p, cmds := rt.snapshot(); p["single"]+cmds["single"] != 0 {
			t.Errorf("cursor %q: %d pipelines and %d commands; want none", c, p["single"], cmds["single"])
		}
	}
	_, newest, newestNext, err := rd.Likers(ctx, "p", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := strconv.ParseInt(newestNext[:1], 10, 64) // the current chunk, as the first page's cursor names it
	_, top0, top0Next, err := rd.Likers(ctx, "p", "0", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cursor string
		users  []string
		next   string
	}{
		{"4294967295", newest, newestNext},
		{strconv.FormatInt(cur+1, 10), newest, newestNext},
		{"4294967295.4294967295", newest, newestNext},
		{"0.4294967295", top0, top0Next},
		{"0.129", top0, top0Next},
	} {
		rt.reset()
		_, users, next, err := rd.Likers(ctx, "p", tt.cursor, 10)
		if err != nil || !slices.Equal(users, tt.users) || next != tt.next {
			t.Errorf("cursor %q: %v, next %q, %v; want %v, next %q", tt.cursor, users, next, err, tt.users, tt.next)
		}
		if p, cmds := rt.snapshot(); p["single"] > 3 || cmds["single"] != 0 {
			t.Errorf("cursor %q: %d pipelines and %d single commands; want at most 3 and none", tt.cursor, p["single"], cmds["single"])
		}
	}
}

// TestForgedIndexCursorsAreBounded: a user's-likes cursor outside [1, MaxCursor] is refused; one
// past the index's end reads nothing and sends the listing on from the end, where the next page
// is the newest.
func TestForgedIndexCursorsAreBounded(t *testing.T) {
	r := newIndexRig(t, false, testIndexGrace)
	ctx := context.Background()
	r.likeEach(t, "alice", postIDs("p", 12)...)
	for _, c := range []string{"0", "-1", "4294967296", "9223372036854775807", "1.5", "١٢"} {
		if likes, next, err := r.index.List(ctx, "alice", c, 5); !errors.Is(err, ErrCursor) {
			t.Errorf("cursor %q: %v, %q, %v; want ErrCursor", c, likes, next, err)
		}
	}
	likes, next, err := r.index.List(ctx, "alice", "4294967295", 5)
	if err != nil || len(likes) != 0 || next != "12" {
		t.Fatalf("cursor past the end: %v, next %q, %v; want none and next 12, the index's end", likes, next, err)
	}
	first, _, _ := r.index.List(ctx, "alice", "", 5)
	if likes, _, err = r.index.List(ctx, "alice", next, 5); err != nil || !slices.Equal(likes, first) {
		t.Errorf("the page after: %v, %v; want the newest page %v", likes, err, first)
	}
}

// FuzzLikersCursor: no cursor panics the likers cursor's parser; one it accepts has its numbers
// within [0, MaxCursor] (rank -1 for none) and reads back the same after likersCursor.
func FuzzLikersCursor(f *testing.F) {
	for _, s := range []string{"", "0", "1", "1.0", "1.", ".1", "-1", "1.-2", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "4294967295", "4294967296", "4294967295.4294967295", "0.4294967296", "+1", "01.02", "١", "１", "1e3",
		"0x1", "1..2", "1.2.3", " 1", "\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		chunk, rank, err := parseLikersCursor(cursor)
		if err != nil {
			if !errors.Is(err, ErrCursor) {
				t.Fatalf("%q: %v; want ErrCursor", cursor, err)
			}
			return
		}
		if chunk < 0 || chunk > MaxCursor || rank < -1 || rank > MaxCursor {
			t.Fatalf("%q: chunk %d, rank %d; want 0 to %d (rank -1 too)", cursor, chunk, rank, MaxCursor)
		}
		if c, r, err := parseLikersCursor(likersCursor(chunk, rank)); cursor != "" && (err != nil || c != chunk || r != rank) {
			t.Fatalf("%q: reads back as %d, %d, %v; want %d, %d", cursor, c, r, err, chunk, rank)
		}
	})
}

// FuzzIndexCursor: no cursor panics the user's-likes cursor's parser; one it accepts is within
// [1, MaxCursor], so the page's ranks (cursor-MaxPage to cursor-1) are too.
func FuzzIndexCursor(f *testing.F) {
	for _, s := range []string{"", "0", "1", "-1", "100", "9223372036854775807", "-9223372036854775808", "4294967295", "4294967296",
		"+1", "01", "١", "1e3", "1.5", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		hi, err := parseCursorNumber(cursor, 1)
		if err != nil {
			if !errors.Is(err, ErrCursor) {
				t.Fatalf("%q: %v; want ErrCursor", cursor, err)
			}
			return
		}
		if hi < 1 || hi > MaxCursor {
			t.Fatalf("%q: %d; want 1 to %d", cursor, hi, MaxCursor)
		}
	})
}
