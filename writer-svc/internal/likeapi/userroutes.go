package likeapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/pkg/ids"
	"github.com/likes/likes/pkg/serve"
	"github.com/likes/likes/pkg/writerapi"
	"github.com/likes/likes/writer-svc/internal/auth"
	"github.com/likes/likes/writer-svc/internal/userlikes"
)

// UserRoutes mounts a user's likes on r: GET /me/likes (the identified user's likes, newest
// first, paged by ?cursor= and ?limit=), DELETE /me/likes (all of them removed, counts corrected,
// idempotent), their admin form /admin/users/{userID}/likes (Admin authorizes it), and GET
// /likes/{postID}/users (a post's likers, newest first, paged the same way; public, as the count).
func (h *Handler) UserRoutes(r chi.Router) {
	r.Get("/me/likes", func(w http.ResponseWriter, r *http.Request) { h.userLikes(w, r, h.self) })
	r.Delete("/me/likes", func(w http.ResponseWriter, r *http.Request) { h.eraseLikes(w, r, h.self) })
	r.Get("/admin/users/{userID}/likes", func(w http.ResponseWriter, r *http.Request) { h.userLikes(w, r, h.asAdmin) })
	r.Delete("/admin/users/{userID}/likes", func(w http.ResponseWriter, r *http.Request) { h.eraseLikes(w, r, h.asAdmin) })
	r.Get("/likes/{postID}/users", func(w http.ResponseWriter, r *http.Request) { h.likers(w, r) })
}

// self is the identified user, as for a like.
func (h *Handler) self(r *http.Request) (string, error) { return h.identify.UserID(r) }

// asAdmin is the user the path names, once Admin has authorized the request.
func (h *Handler) asAdmin(r *http.Request) (string, error) {
	if h.admin == nil {
		return "", auth.ErrAdminOff
	}
	if err := h.admin.Authorize(r); err != nil {
		return "", err
	}
	user := chi.URLParam(r, "userID")
	if err := ids.ValidUserID(user); err != nil {
		return "", err
	}
	return user, nil
}

func (h *Handler) userLikes(w http.ResponseWriter, r *http.Request, who func(*http.Request) (string, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	limit, err := pageLimit(r)
	if err == nil {
		err = h.allowData(r)
	}
	var user string
	if err == nil {
		user, err = who(r)
	}
	var posts []userlikes.LikedPost
	var next string
	if err == nil {
		posts, next, err = h.index.List(ctx, user, r.URL.Query().Get("cursor"), limit)
	}
	if err == nil {
		err = h.store.ConfirmRead(ctx) // on a Cluster the user's index goes unconfirmed (store.ConfirmRead)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	out := writerapi.UserLikesPage{UserID: user, Likes: make([]writerapi.LikedPost, len(posts)), NextCursor: next}
	for i, p := range posts {
		out.Likes[i] = writerapi.LikedPost(p)
	}
	serve.JSON(w, http.StatusOK, out)
}

func (h *Handler) eraseLikes(w http.ResponseWriter, r *http.Request, who func(*http.Request) (string, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), h.erase)
	defer cancel()
	r = r.WithContext(ctx)
	err := h.allowData(r)
	var user string
	if err == nil {
		user, err = who(r)
	}
	var n int
	if err == nil {
		n, err = h.index.Delete(ctx, user)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	serve.JSON(w, http.StatusOK, writerapi.Erased{UserID: user, Removed: n})
}

func (h *Handler) likers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	post := chi.URLParam(r, "postID")
	err := ids.ValidPostID(post)
	var limit int
	if err == nil {
		limit, err = pageLimit(r)
	}
	if err == nil {
		err = h.allowData(r)
	}
	var count int64
	var users []string
	var next string
	if err == nil {
		count, users, next, err = h.reader.Likers(ctx, post, r.URL.Query().Get("cursor"), limit)
	}
	if err == nil {
		err = h.store.ConfirmRead(ctx, post)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.outage.ok()
	out := writerapi.LikersPage{PostID: post, Count: count, Users: make([]writerapi.Liker, len(users)), NextCursor: next}
	for i, u := range users {
		out.Users[i] = writerapi.Liker{UserID: u}
	}
	serve.JSON(w, http.StatusOK, out)
}

// pageLimit reads ?limit=, DefaultPage when absent.
func pageLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return userlikes.DefaultPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > userlikes.MaxPage {
		return 0, userlikes.ErrLimit
	}
	return n, nil
}

// allowData spends one token of the client address's budget for reads and erasures of user data
// (nil limit: none); a refusal is a 429 with Retry-After, before any of the request's Redis work.
func (h *Handler) allowData(r *http.Request) error {
	if h.dataAddr == nil {
		return nil
	}
	return limit(r.Context(), h.dataAddr, clientip.Source(h.clients.Addr(r)), limitedError{data: true, perAddr: true})
}
