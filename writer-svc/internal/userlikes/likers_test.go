package userlikes

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/likes/likes/writer-svc/internal/storetest"
)

// TestLikersPaging lists a post's likers across chunks: newest first (by batch; a batch's likers
// share one version), every liker once, in pages of exactly the limit until the last, whose next
// cursor is "". A like between two pages goes above the cursor and does not shift the next page.
func TestLikersPaging(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	ctx := context.Background()
	rd := NewReader(rdb, storetest.Keys, 100)
	users, batchOf := storetest.LikeBatches(t, s, "p", "u", 1, 50, 200, 1, 7, 50)
	storetest.CheckLikers(t, rdb, "p", users, 200)

	all := listLikers(t, rd, "p", MaxPage, nil)
	if len(all) != len(users) {
		t.Fatalf("listed %d likers; want %d", len(all), len(users))
	}
	seen := make(map[string]bool)
	for i, u := range all {
		if seen[u] {
			t.Errorf("%s listed twice", u)
		}
		seen[u] = true
		b, ok := batchOf[u]
		if !ok {
			t.Fatalf("listed %s, who never liked", u)
		}
		if i == 0 {
			continue
		}
		prev := all[i-1]
		if pb := batchOf[prev]; pb < b {
			t.Errorf("entry %d: %s (batch %d) after %s (batch %d); want newest first", i, u, b, prev, pb)
		}
	}

	added := 0
	paged := listLikers(t, rd, "p", 7, func() {
		added++
		if _, err := s.Like(ctx, "p", "late"+strconv.Itoa(added)); err != nil {
			t.Fatal(err)
		}
	})
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 7 with likes between them listed %d likers; want the %d of one listing, in its order", len(paged), len(all))
	}
	if want := (len(all) + 6) / 7; added+1 != want {
		t.Errorf("%d pages of 7 for %d likers; want %d", added+1, len(all), want)
	}
}

// listLikers pages through post's likers with limit, calling between (if not nil) after every
// page but the last, and checks each page: the count, and exactly limit likers on all but the
// last.
func listLikers(t *testing.T, rd *Reader, post string, limit int, between func()) []string {
	t.Helper()
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		count, likers, next, err := rd.Likers(context.Background(), post, cursor, limit)
		if err != nil {
			t.Fatalf("page %d (cursor %q): %v", page, cursor, err)
		}
		if want, _ := rd.rdb.Get(context.Background(), storetest.Keys.Count(post)).Int64(); count != want {
			t.Errorf("page %d: count %d; want %d", page, count, want)
		}
		out = append(out, likers...)
		if next == "" {
			if len(likers) > limit {
				t.Errorf("last page: %d likers; want at most %d", len(likers), limit)
			}
			return out
		}
		if len(likers) != limit {
			t.Errorf("page %d (cursor %q): %d likers; want %d", page, cursor, len(likers), limit)
		}
		if page > 1000 {
			t.Fatal("more than 1000 pages")
		}
		cursor = next
		if between != nil {
			between()
		}
	}
}

// TestLikersRefusesBadRequests: cursors no listing returns and limits out of range are refused
// with their sentinels; a post never liked lists nothing, with count 0 and no next page.
func TestLikersRefusesBadRequests(t *testing.T) {
	s, rdb := storetest.NewStore(t)
	rd := NewReader(rdb, storetest.Keys, 100)
	ctx := context.Background()
	if _, err := s.Like(ctx, "p", "u"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cursor string
		limit  int
		want   error
	}{
		{"cursor not a number", "x", 10, ErrCursor},
		{"negative chunk", "-1", 10, ErrCursor},
		{"rank not a number", "1.x", 10, ErrCursor},
		{"negative rank", "1.-2", 10, ErrCursor},
		{"empty rank", "1.", 10, ErrCursor},
		{"limit 0", "", 0, ErrLimit},
		{"limit above MaxPage", "", MaxPage + 1, ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, users, next, err := rd.Likers(ctx, "p", tt.cursor, tt.limit); !errors.Is(err, tt.want) {
				t.Errorf("Likers(cursor %q, limit %d) = %v, %q, %v; want %v", tt.cursor, tt.limit, users, next, err, tt.want)
			}
		})
	}
	count, users, next, err := rd.Likers(ctx, "never", "", 10)
	if err != nil || count != 0 || len(users) != 0 || next != "" {
		t.Errorf("a post never liked: count %d, users %v, next %q, %v; want 0, none, \"\"", count, users, next, err)
	}
	count, users, next, err = rd.Likers(ctx, "p", "", MaxPage)
	if err != nil || count != 1 || len(users) != 1 || users[0] != "u" || next != "" {
		t.Errorf("a post of one like: count %d, users %v, next %q, %v; want 1, u, \"\"", count, users, next, err)
	}
}
