package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/redistest"
)

// testAdminToken is the ADMIN_TOKEN of the admin tests: the shortest the writer accepts is 32.
const testAdminToken = "an-admin-token-of-32-characters~"

// decodeReply decodes a reply's raw body into v, failing the test unless it was want.
func decodeReply(t *testing.T, r reply, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d %s; want %d", r.Status, r.Raw, want)
	}
	if err := json.Unmarshal([]byte(r.Raw), v); err != nil {
		t.Fatalf("%q: %v", r.Raw, err)
	}
}

// wantCounts checks each post's count as GET /count answers it.
func wantCounts(t *testing.T, w *testWriter, want map[string]int64) {
	t.Helper()
	for post, n := range want {
		if got := clienttest.CountOf(t, w.URL, post); got != n {
			t.Errorf("GET /count/%s = %d; want %d", post, got, n)
		}
	}
}

// TestUserLikesExport: GET /me/likes lists the user's likes newest first, in pages that add up to
// every like once; a like made between two pages does not shift the next one; an unlike drops
// its post at once (on a Cluster the index entry stays a while and the read hides it); other
// users' likes are not listed, and a user without likes gets an empty list.
func TestUserLikesExport(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := b.start(t, "p0", nil).writer
			start := time.Now()
			wantLike(t, w.like(t, "p3", "bob"), "p3", 1, true)
			var posts []string // newest first
			for i := range 7 {
				p := "p" + itoa(i)
				wantLike(t, w.like(t, p, "alice"), p, map[bool]int{true: 2, false: 1}[p == "p3"], true)
				posts = slices.Insert(posts, 0, p)
			}
			alice := "X-User-ID: alice"

			likes, pages := clienttest.UserLikes(t, w.URL, "/me/likes", 3, alice)
			if got := clienttest.PostIDs(likes); !slices.Equal(got, posts) {
				t.Errorf("alice's likes %v; want %v", got, posts)
			}
			var sizes []int
			for _, p := range pages {
				sizes = append(sizes, len(p.Likes))
				if p.UserID != "alice" {
					t.Errorf("page for user %q; want alice", p.UserID)
				}
			}
			if !slices.Equal(sizes, []int{3, 3, 1}) {
				t.Errorf("pages of %v likes; want [3 3 1]", sizes)
			}
			for i, l := range likes {
				if l.LikedAt.Before(start.Add(-time.Second)) || l.LikedAt.After(time.Now().Add(time.Second)) {
					t.Errorf("%s liked at %v; want between the test's start %v and now", l.PostID, l.LikedAt, start)
				}
				if i > 0 && !l.LikedAt.Before(likes[i-1].LikedAt) {
					t.Errorf("%s liked at %v, not before %s at %v: not newest first", l.PostID, l.LikedAt, likes[i-1].PostID, likes[i-1].LikedAt)
				}
			}
			if likes, pages := clienttest.UserLikes(t, w.URL, "/me/likes", 0, alice); len(pages) != 1 || len(likes) != 7 {
				t.Errorf("default page: %d pages, %d likes; want 1 page of all 7 (20 a page)", len(pages), len(likes))
			}

			var first, second clienttest.UserLikesPage
			decodeReply(t, w.do(t, http.MethodGet, "/me/likes?limit=3", alice), http.StatusOK, &first)
			wantLike(t, w.like(t, "p7", "alice"), "p7", 1, true)
			decodeReply(t, w.do(t, http.MethodGet, "/me/likes?limit=3&cursor="+first.NextCursor, alice), http.StatusOK, &second)
			if got := clienttest.PostIDs(second.Likes); !slices.Equal(got, posts[3:6]) {
				t.Errorf("the page after a like made meanwhile %v; want %v (not shifted)", got, posts[3:6])
			}

			wantLike(t, w.do(t, http.MethodDelete, "/like/p2", alice), "p2", 0, false)
			likes, _ = clienttest.UserLikes(t, w.URL, "/me/likes", 2, alice)
			want := []string{"p7", "p6", "p5", "p4", "p3", "p1", "p0"}
			if got := clienttest.PostIDs(likes); !slices.Equal(got, want) {
				t.Errorf("alice's likes after unliking p2: %v; want %v", got, want)
			}
			if likes, _ := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "X-User-ID: bob"); !slices.Equal(clienttest.PostIDs(likes), []string{"p3"}) {
				t.Errorf("bob's likes %v; want [p3]", clienttest.PostIDs(likes))
			}
			got := w.do(t, http.MethodGet, "/me/likes", "X-User-ID: carol")
			if got.Status != http.StatusOK || !strings.Contains(got.Raw, `"likes":[]`) || !strings.Contains(got.Raw, `"next_cursor":""`) {
				t.Errorf("a user without likes: %d %s; want 200 with an empty list and no cursor", got.Status, got.Raw)
			}
		})
	}
}

// TestUserLikesErase: DELETE /me/likes unlikes every post the user liked, corrects each count,
// leaves other users' likes alone and no trace of the user's likes in Redis; a second DELETE
// removes 0, and the user may like again afterwards.
func TestUserLikesErase(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			be := b.start(t, "a", nil)
			w := be.writer
			for _, p := range []string{"a", "b", "c"} {
				wantLike(t, w.like(t, p, "alice"), p, 1, true)
			}
			wantLike(t, w.like(t, "b", "bob"), "b", 2, true)

			if got := clienttest.EraseLikes(t, w.URL, "/me/likes", "X-User-ID: alice"); got != (clienttest.Erased{UserID: "alice", Removed: 3}) {
				t.Errorf("DELETE /me/likes: %+v; want alice, 3 removed", got)
			}
			wantCounts(t, w, map[string]int64{"a": 0, "b": 1, "c": 0})
			if likes, _ := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "X-User-ID: alice"); len(likes) != 0 {
				t.Errorf("alice's likes after the erasure: %v; want none", clienttest.PostIDs(likes))
			}
			if likes, _ := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "X-User-ID: bob"); !slices.Equal(clienttest.PostIDs(likes), []string{"b"}) {
				t.Errorf("bob's likes after alice's erasure: %v; want [b]", clienttest.PostIDs(likes))
			}
			if users, _ := clienttest.Likers(t, w.URL, "b", 0); !slices.Equal(clienttest.UserIDs(users), []string{"bob"}) {
				t.Errorf("likers of b after alice's erasure: %v; want [bob]", clienttest.UserIDs(users))
			}
			ctx := context.Background()
			left := []string{keys.UserLikes("alice")}
			for _, p := range []string{"a", "b", "c"} {
				left = append(left, keys.User(p, "alice"))
			}
			for _, k := range left {
				if n := be.data.Exists(ctx, k).Val(); n != 0 {
					t.Errorf("key %s still exists after the erasure", k)
				}
			}
			for _, p := range []string{"a", "b", "c"} {
				if err := be.data.LPos(ctx, keys.Likers(p, 0), "alice", redis.LPosArgs{}).Err(); !errors.Is(err, redis.Nil) {
					t.Errorf("alice still in the likers of %s after the erasure (%v)", p, err)
				}
			}

			if got := clienttest.EraseLikes(t, w.URL, "/me/likes", "X-User-ID: alice"); got.Removed != 0 {
				t.Errorf("second DELETE /me/likes removed %d; want 0", got.Removed)
			}
			wantCounts(t, w, map[string]int64{"a": 0, "b": 1, "c": 0})
			wantLike(t, w.like(t, "a", "alice"), "a", 1, true)
			if likes, _ := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "X-User-ID: alice"); !slices.Equal(clienttest.PostIDs(likes), []string{"a"}) {
				t.Errorf("alice's likes after liking again: %v; want [a]", clienttest.PostIDs(likes))
			}
		})
	}
}

// TestUserLikesEraseAtShortestWriteTimeout: an erasure waits out the index grace (REQUEST_TIMEOUT
// + 1s) on a Cluster before it answers, so the shortest WRITE_TIMEOUT the writer accepts there
// (REQUEST_TIMEOUT + 3s; shorter, every DELETE /me/likes answered 503) still answers it; on one
// Redis nothing waits and a write timeout just past the request timeout is enough.
func TestUserLikesEraseAtShortestWriteTimeout(t *testing.T) {
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) *testWriter
	}{
		{"single", func(t *testing.T) *testWriter {
			return startWriter(t, nil, trustHeader, "--write-timeout", "2100ms")
		}},
		{"cluster", func(t *testing.T) *testWriter {
			c := redistest.StartCluster(t, 3)
			return startWriter(t, c.Nodes[0], trustHeader, "--redis-cluster-addrs", c.AddrList(), "--write-timeout", "5s")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.start(t)
			wantLike(t, w.like(t, "a", "alice"), "a", 1, true)
			if got := clienttest.EraseLikes(t, w.URL, "/me/likes", "X-User-ID: alice"); got.Removed != 1 {
				t.Errorf("DELETE /me/likes removed %d; want 1", got.Removed)
			}
			wantCounts(t, w, map[string]int64{"a": 0})
		})
	}
	for give, ok := range map[string]bool{"4999ms": false, "5s": true} {
		_, err := loadConfig([]string{"writer-svc", "--redis-cluster-addrs", "a:7000", "--write-timeout", give}, func(string) string { return "" }, &strings.Builder{})
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "on a Cluster") {
			t.Errorf("a Cluster with write timeout %s: %v; want accepted %v", give, err, ok)
		}
	}
}

// TestUserLikesWhoLiked: GET /likes/{postID}/users lists a post's likers newest first across its likers
// chunks (140 likers: more than one chunk of 128), in pages that add up to every liker once, with
// the count; an unlike and an erasure drop their users, in the first chunk and the last.
func TestUserLikesWhoLiked(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := b.start(t, "big", nil).writer
			const n = 140
			var want []string // newest first
			for i := range n {
				u := "u" + itoa(i)
				wantLike(t, w.like(t, "big", u), "big", i+1, true)
				want = slices.Insert(want, 0, u)
			}
			users, pages := clienttest.Likers(t, w.URL, "big", 50)
			if got := clienttest.UserIDs(users); !slices.Equal(got, want) {
				t.Errorf("likers %v; want %v", got, want)
			}
			var sizes []int
			for _, p := range pages {
				sizes = append(sizes, len(p.Users))
				if p.PostID != "big" || p.Count != n {
					t.Errorf("page of post %q count %d; want big, %d", p.PostID, p.Count, n)
				}
			}
			if !slices.Equal(sizes, []int{50, 50, 40}) {
				t.Errorf("pages of %v likers; want [50 50 40]", sizes)
			}
			var first clienttest.LikersPage
			decodeReply(t, w.do(t, http.MethodGet, "/likes/big/users"), http.StatusOK, &first)
			if len(first.Users) != 20 || first.NextCursor == "" {
				t.Errorf("default page: %d likers, cursor %q; want 20 and a cursor", len(first.Users), first.NextCursor)
			}

			wantLike(t, w.do(t, http.MethodDelete, "/like/big", "X-User-ID: u5"), "big", n-1, false)
			if got := clienttest.EraseLikes(t, w.URL, "/me/likes", "X-User-ID: u139"); got.Removed != 1 {
				t.Errorf("u139's erasure removed %d; want 1", got.Removed)
			}
			want = slices.DeleteFunc(want, func(u string) bool { return u == "u5" || u == "u139" })
			users, pages = clienttest.Likers(t, w.URL, "big", 100)
			if got := clienttest.UserIDs(users); !slices.Equal(got, want) {
				t.Errorf("likers after an unlike and an erasure: %v; want %v", got, want)
			}
			if pages[0].Count != n-2 {
				t.Errorf("count %d; want %d", pages[0].Count, n-2)
			}

			var none clienttest.LikersPage
			got := w.do(t, http.MethodGet, "/likes/never-liked/users")
			decodeReply(t, got, http.StatusOK, &none)
			if none.Count != 0 || len(none.Users) != 0 || none.NextCursor != "" || !strings.Contains(got.Raw, `"users":[]`) {
				t.Errorf("a post never liked: %s; want count 0, an empty list, no cursor", got.Raw)
			}
		})
	}
}

// TestUserLikesWhoLikedConcurrently: 300 users like one post at once, in batches that cross likers
// chunks: every one is listed once, newest first, and the count agrees.
func TestUserLikesWhoLikedConcurrently(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := b.start(t, "crowd", nil).writer
			const n, senders = 300, 50
			client := loadClient(t, senders)
			users := make(chan string)
			var wg sync.WaitGroup
			for range senders {
				wg.Go(func() {
					for u := range users {
						if a, err := w.send(client, "crowd", change{user: u}); err != nil || a.status != http.StatusOK || !a.liked {
							t.Errorf("like by %s: %+v, %v; want 200 liked", u, a, err)
						}
					}
				})
			}
			want := make([]string, n)
			for i := range n {
				want[i] = "u" + itoa(i)
				users <- want[i]
			}
			close(users)
			wg.Wait()

			likers, pages := clienttest.Likers(t, w.URL, "crowd", 100)
			got := clienttest.UserIDs(likers)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%d likers listed (%d distinct); want the %d users once each", len(got), len(slices.Compact(slices.Clone(got))), n)
			}
			if pages[0].Count != n {
				t.Errorf("count %d; want %d", pages[0].Count, n)
			}
		})
	}
}

// TestUserLikesBadPaging: a cursor no listing returned, a limit outside 1..100 and a bad id are
// 400s with a JSON error, on every listing; the limits' bounds themselves are accepted.
func TestUserLikesBadPaging(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--admin-token", testAdminToken)
	w.like(t, "p", "alice")
	alice, admin := "X-User-ID: alice", "Authorization: Bearer "+testAdminToken
	tests := []struct {
		give   string
		header string
		want   int
	}{
		{"/me/likes?cursor=abc", alice, 400},
		{"/me/likes?cursor=0", alice, 400},
		{"/me/likes?cursor=-3", alice, 400},
		{"/me/likes?cursor=1.5", alice, 400},
		{"/me/likes?limit=0", alice, 400},
		{"/me/likes?limit=101", alice, 400},
		{"/me/likes?limit=-1", alice, 400},
		{"/me/likes?limit=ten", alice, 400},
		{"/me/likes?limit=1", alice, 200},
		{"/me/likes?limit=100", alice, 200},
		{"/me/likes?cursor=5&limit=100", alice, 200},
		{"/likes/p/users?cursor=abc", "", 400},
		{"/likes/p/users?cursor=-1", "", 400},
		{"/likes/p/users?cursor=1.x", "", 400},
		{"/likes/p/users?cursor=1.-2", "", 400},
		{"/likes/p/users?cursor=.3", "", 400},
		{"/likes/p/users?limit=0", "", 400},
		{"/likes/p/users?limit=101", "", 400},
		{"/likes/p/users?limit=1", "", 200},
		{"/likes/p/users?limit=100&cursor=0.1", "", 200},
		{"/likes/bad%7Bid%7D/users", "", 400},
		{"/likes/" + strings.Repeat("x", 65) + "/users", "", 400},
		{"/admin/users/alice/likes?limit=0", admin, 400},
		{"/admin/users/alice/likes?cursor=x", admin, 400},
		{"/admin/users/" + strings.Repeat("u", 129) + "/likes", admin, 400},
		{"/admin/users/alice/likes?limit=100", admin, 200},
	}
	for _, tt := range tests {
		var headers []string
		if tt.header != "" {
			headers = append(headers, tt.header)
		}
		got := w.do(t, http.MethodGet, tt.give, headers...)
		if got.Status != tt.want {
			t.Errorf("GET %s: %d %s; want %d", tt.give, got.Status, got.Raw, tt.want)
			continue
		}
		if msg, _ := got.Body["error"].(string); tt.want == 400 && msg == "" {
			t.Errorf("GET %s: 400 %s; want a JSON error", tt.give, got.Raw)
		}
	}
	if got := w.do(t, http.MethodDelete, "/admin/users/"+strings.Repeat("u", 129)+"/likes", admin); got.Status != 400 {
		t.Errorf("DELETE of a bad user id: %d %s; want 400", got.Status, got.Raw)
	}
	wantCounts(t, w, map[string]int64{"p": 1})
}

// TestUserLikesAdminByToken: ADMIN_TOKEN lists and erases another user's likes; a wrong token is 403,
// no token or another scheme 401, and neither X-User-ID nor a session token makes an admin; a
// refused erasure removes nothing.
func TestUserLikesAdminByToken(t *testing.T) {
	w := startWriter(t, nil, trustHeader, "--admin-token", testAdminToken)
	w.like(t, "x", "alice")
	w.like(t, "y", "alice")
	w.like(t, "y", "bob")
	session, err := clienttest.TakeSession(w.URL)
	if err != nil {
		t.Fatal(err)
	}
	const path = "/admin/users/alice/likes"
	admin := "Authorization: Bearer " + testAdminToken

	var page clienttest.UserLikesPage
	decodeReply(t, w.do(t, http.MethodGet, path, admin), http.StatusOK, &page)
	if page.UserID != "alice" || !slices.Equal(clienttest.PostIDs(page.Likes), []string{"y", "x"}) {
		t.Errorf("admin's GET %s: %+v; want alice's likes [y x]", path, page)
	}
	refused := []struct {
		name    string
		headers []string
		want    int
	}{
		{"a wrong token", []string{"Authorization: Bearer " + strings.Repeat("w", len(testAdminToken))}, 403},
		{"the token with a character more", []string{admin + "x"}, 403},
		{"a session token", []string{"Authorization: Bearer " + session.Token}, 403},
		{"no token", nil, 401},
		{"X-User-ID naming the user", []string{"X-User-ID: alice"}, 401},
		{"the token as Basic", []string{"Authorization: Basic " + testAdminToken}, 401},
		{"two tokens", []string{admin, admin}, 401},
	}
	for _, tt := range refused {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			got := w.do(t, method, path, tt.headers...)
			if got.Status != tt.want {
				t.Errorf("%s %s with %s: %d %s; want %d", method, path, tt.name, got.Status, got.Raw, tt.want)
			}
			if tt.want == 401 && got.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with %s: 401 without WWW-Authenticate", method, path, tt.name)
			}
		}
	}
	wantCounts(t, w, map[string]int64{"x": 1, "y": 2})

	if got := clienttest.EraseLikes(t, w.URL, path, admin); got != (clienttest.Erased{UserID: "alice", Removed: 2}) {
		t.Errorf("admin's DELETE %s: %+v; want alice, 2 removed", path, got)
	}
	wantCounts(t, w, map[string]int64{"x": 0, "y": 1})
	if got := clienttest.EraseLikes(t, w.URL, path, admin); got.Removed != 0 {
		t.Errorf("second admin DELETE removed %d; want 0", got.Removed)
	}
	if likes, _ := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "X-User-ID: bob"); !slices.Equal(clienttest.PostIDs(likes), []string{"y"}) {
		t.Errorf("bob's likes after alice's erasure: %v; want [y]", clienttest.PostIDs(likes))
	}
}

// siteToken returns an HS256 site JWT for sub, valid for an hour, with extra claims (a role).
func siteToken(t *testing.T, secret, sub string, extra jwt.MapClaims) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUserLikesAdminBySiteJWT: with AUTH_JWT_SECRET, /me/likes is the token's user, and a site JWT is
// an admin's when its "role" is AUTH_ADMIN_ROLE (default admin) or its "roles" list it; any other
// valid token is 403, a forged or expired one 401. ADMIN_TOKEN still works beside the site's
// tokens, and a bearer that is neither is then 401 (not a valid token).
func TestUserLikesAdminBySiteJWT(t *testing.T) {
	w := startWriter(t, nil, "--auth-jwt-secret", testSecret, "--admin-token", testAdminToken)
	alice := siteToken(t, testSecret, "alice", nil)
	for _, p := range []string{"x", "y"} {
		wantLike(t, w.do(t, http.MethodPost, "/like/"+p, "Authorization: Bearer "+alice), p, 1, true)
	}
	likes, pages := clienttest.UserLikes(t, w.URL, "/me/likes", 0, "Authorization: Bearer "+alice, "X-User-ID: mallory")
	if pages[0].UserID != "alice" || !slices.Equal(clienttest.PostIDs(likes), []string{"y", "x"}) {
		t.Errorf("GET /me/likes with alice's token (and X-User-ID mallory): %s %v; want alice [y x]", pages[0].UserID, clienttest.PostIDs(likes))
	}
	session, err := clienttest.TakeSession(w.URL)
	if err != nil {
		t.Fatal(err)
	}

	const path = "/admin/users/alice/likes"
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"role admin", siteToken(t, testSecret, "root", jwt.MapClaims{"role": "admin"}), 200},
		{"roles listing admin", siteToken(t, testSecret, "root", jwt.MapClaims{"roles": []string{"editor", "admin"}}), 200},
		{"the admin token", testAdminToken, 200},
		{"role editor", siteToken(t, testSecret, "root", jwt.MapClaims{"role": "editor"}), 403},
		{"roles without admin", siteToken(t, testSecret, "root", jwt.MapClaims{"roles": []string{"administrator", "Admin"}}), 403},
		{"no role (the user's own token)", alice, 403},
		{"a session token", session.Token, 403},
		{"role admin, forged", siteToken(t, "not-the-secret-not-the-secret-000", "root", jwt.MapClaims{"role": "admin"}), 401},
		{"role admin, expired", siteToken(t, testSecret, "root", jwt.MapClaims{"role": "admin", "exp": time.Now().Add(-time.Minute).Unix()}), 401},
		{"neither a token nor the admin token", strings.Repeat("w", len(testAdminToken)), 401},
	}
	for _, tt := range tests {
		got := w.do(t, http.MethodGet, path, "Authorization: Bearer "+tt.token)
		if got.Status != tt.want {
			t.Errorf("GET %s with %s: %d %s; want %d", path, tt.name, got.Status, got.Raw, tt.want)
		}
		if tt.want == 200 && got.Body["user_id"] != "alice" {
			t.Errorf("GET %s with %s: %s; want alice's likes", path, tt.name, got.Raw)
		}
	}
	editor := siteToken(t, testSecret, "root", jwt.MapClaims{"role": "editor"})
	if got := w.do(t, http.MethodDelete, path, "Authorization: Bearer "+editor); got.Status != 403 {
		t.Errorf("DELETE %s by an editor: %d %s; want 403", path, got.Status, got.Raw)
	}
	wantCounts(t, w, map[string]int64{"x": 1, "y": 1})
	root := siteToken(t, testSecret, "root", jwt.MapClaims{"role": "admin"})
	if got := clienttest.EraseLikes(t, w.URL, path, "Authorization: Bearer "+root); got != (clienttest.Erased{UserID: "alice", Removed: 2}) {
		t.Errorf("DELETE %s by an admin: %+v; want alice, 2 removed", path, got)
	}
	wantCounts(t, w, map[string]int64{"x": 0, "y": 0})
}

// TestUserLikesAdminRole: AUTH_ADMIN_ROLE names the role that grants the admin API, and no other.
func TestUserLikesAdminRole(t *testing.T) {
	w := startWriter(t, nil, "--auth-jwt-secret", testSecret, "--auth-admin-role", "moderator")
	const path = "/admin/users/alice/likes"
	for role, want := range map[string]int{"moderator": 200, "admin": 403} {
		tok := siteToken(t, testSecret, "root", jwt.MapClaims{"role": role})
		if got := w.do(t, http.MethodGet, path, "Authorization: Bearer "+tok); got.Status != want {
			t.Errorf("GET %s with role %s: %d %s; want %d", path, role, got.Status, got.Raw, want)
		}
	}
}

// TestUserLikesAdminOff: with neither ADMIN_TOKEN nor the site's JWTs, or with the site's JWTs and
// an empty AUTH_ADMIN_ROLE, the admin API is off: 403 whatever the request carries, and nothing
// is removed.
func TestUserLikesAdminOff(t *testing.T) {
	const path = "/admin/users/alice/likes"
	t.Run("no admin token, no site tokens", func(t *testing.T) {
		w := startWriter(t, nil, trustHeader)
		w.like(t, "x", "alice")
		for _, headers := range [][]string{nil, {"Authorization: Bearer " + testAdminToken}, {"X-User-ID: alice"}} {
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				if got := w.do(t, method, path, headers...); got.Status != 403 || !strings.Contains(got.Raw, "ADMIN_TOKEN") {
					t.Errorf("%s %s with %q: %d %s; want 403 naming ADMIN_TOKEN", method, path, headers, got.Status, got.Raw)
				}
			}
		}
		wantCounts(t, w, map[string]int64{"x": 1})
	})
	t.Run("site tokens, no admin role", func(t *testing.T) {
		w := startWriter(t, nil, "--auth-jwt-secret", testSecret, "--auth-admin-role", "")
		tok := siteToken(t, testSecret, "root", jwt.MapClaims{"role": "admin", "roles": []string{""}})
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			if got := w.do(t, method, path, "Authorization: Bearer "+tok); got.Status != 403 {
				t.Errorf("%s %s with role admin: %d %s; want 403", method, path, got.Status, got.Raw)
			}
		}
	})
}

// TestUserLikesAdminTokenConfig: an ADMIN_TOKEN shorter than 32 characters, or with a character a bearer
// token cannot carry (the writer would start and answer every admin request 401), is refused at
// start; 32 bearer characters are taken.
func TestUserLikesAdminTokenConfig(t *testing.T) {
	for _, tt := range []struct {
		give string
		want string // in the error; "" for none
	}{
		{strings.Repeat("t", 31), "at least 32"},
		{strings.Repeat("t", 31) + "!", "characters"},
		{strings.Repeat("t", 31) + " x", "characters"},
		{strings.Repeat("t", 32), ""},
		{"A-Z.a_z~0+9/" + strings.Repeat("=", 20), ""},
		{"", ""}, // no admin token: the admin API needs a site JWT, or is off
	} {
		cfg, err := loadConfig([]string{"writer-svc"}, func(k string) string {
			if k == "ADMIN_TOKEN" {
				return tt.give
			}
			return ""
		}, &strings.Builder{})
		switch {
		case tt.want == "" && (err != nil || cfg.Auth.AdminToken != tt.give):
			t.Errorf("ADMIN_TOKEN %q: %q, %v; want it taken", tt.give, cfg.Auth.AdminToken, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "admin token") || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ADMIN_TOKEN %q: %v; want an error about the admin token mentioning %q", tt.give, err, tt.want)
		}
	}
}
