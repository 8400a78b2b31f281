package clienttest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/likes/likes/pkg/writerapi"
)

// The bodies of a user's likes and a post's likers, as the writer encodes them.
type (
	LikedPost     = writerapi.LikedPost
	UserLikesPage = writerapi.UserLikesPage
	Liker         = writerapi.Liker
	LikersPage    = writerapi.LikersPage
	Erased        = writerapi.Erased
)

// maxPages bounds a listing, so that a cursor that never ends fails the test instead of hanging.
const maxPages = 10000

// UserLikes reads every page of the likes at path (/me/likes, or /admin/users/{id}/likes) with
// limit entries a page (0: the writer's default), sending headers ("Name: value") with each
// request. It fails the test on any answer but 200 and on a page longer than limit, and returns
// the entries in the order served and the pages.
func UserLikes(t testing.TB, writerURL, path string, limit int, headers ...string) ([]LikedPost, []UserLikesPage) {
	t.Helper()
	var all []LikedPost
	var pages []UserLikesPage
	for cursor := ""; len(pages) < maxPages; {
		var p UserLikesPage
		getPage(t, writerURL+path, cursor, limit, headers, &p)
		if limit > 0 && len(p.Likes) > limit {
			t.Fatalf("GET %s page %d: %d likes; want at most %d", path, len(pages), len(p.Likes), limit)
		}
		all, pages = append(all, p.Likes...), append(pages, p)
		if cursor = p.NextCursor; cursor == "" {
			return all, pages
		}
	}
	t.Fatalf("GET %s: no end after %d pages", path, maxPages)
	return nil, nil
}

// Likers reads every page of post's likers with limit entries a page (0: the writer's default).
// It fails the test on any answer but 200 and on a page longer than limit, and returns the
// likers in the order served and the pages.
func Likers(t testing.TB, writerURL, post string, limit int) ([]Liker, []LikersPage) {
	t.Helper()
	var all []Liker
	var pages []LikersPage
	for cursor := ""; len(pages) < maxPages; {
		var p LikersPage
		getPage(t, writerURL+"/likes/"+post+"/users", cursor, limit, nil, &p)
		if limit > 0 && len(p.Users) > limit {
			t.Fatalf("likers of %s page %d: %d users; want at most %d", post, len(pages), len(p.Users), limit)
		}
		all, pages = append(all, p.Users...), append(pages, p)
		if cursor = p.NextCursor; cursor == "" {
			return all, pages
		}
	}
	t.Fatalf("likers of %s: no end after %d pages", post, maxPages)
	return nil, nil
}

// EraseLikes erases the likes at path (/me/likes, or /admin/users/{id}/likes) with headers
// ("Name: value"), failing the test on any answer but 200.
func EraseLikes(t testing.TB, writerURL, path string, headers ...string) Erased {
	t.Helper()
	var e Erased
	if status, body := sendJSON(t, http.MethodDelete, writerURL+path, headers, &e); status != http.StatusOK {
		t.Fatalf("DELETE %s: %d %s; want 200", path, status, body)
	}
	return e
}

// getPage reads one page of a listing at u from cursor into v, failing the test unless 200.
func getPage(t testing.TB, u, cursor string, limit int, headers []string, v any) {
	t.Helper()
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if status, body := sendJSON(t, http.MethodGet, u, headers, v); status != http.StatusOK {
		t.Fatalf("GET %s: %d %s; want 200", u, status, body)
	}
}

// sendJSON sends method to u with headers ("Name: value") and decodes a 200's body into v. It
// returns the status and the body.
func sendJSON(t testing.TB, method, u string, headers []string, v any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := writerClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s %s: %q is no reply: %v", method, u, body, err)
		}
	}
	return resp.StatusCode, string(body)
}

// PostIDs returns the posts of a user's likes, in order.
func PostIDs(likes []LikedPost) []string {
	out := make([]string, len(likes))
	for i, l := range likes {
		out[i] = l.PostID
	}
	return out
}

// UserIDs returns the users of a post's likers, in order.
func UserIDs(likers []Liker) []string {
	out := make([]string, len(likers))
	for i, l := range likers {
		out[i] = l.UserID
	}
	return out
}
