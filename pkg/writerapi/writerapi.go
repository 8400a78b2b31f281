// Package writerapi holds the JSON bodies of writer-svc's HTTP API: the writer encodes them, and
// clients and tests decode the same types, so the wire format has one definition.
package writerapi

import (
	"strconv"
	"time"
)

// LikeReply is the body of a like or an unlike: the post's count after it, and whether this
// request added the like (false for a repeated like and always for an unlike).
type LikeReply struct {
	PostID string `json:"post_id"`
	Count  int64  `json:"count"`
	Liked  bool   `json:"liked"`
}

// AppendLikeReply appends LikeReply{post, count, liked} and a newline exactly as encoding/json
// would write it, without its reflection on the like path: post ids are validated to need no
// escaping (package ids).
func AppendLikeReply(dst []byte, post string, count int64, liked bool) []byte {
	dst = append(dst, `{"post_id":"`...)
	dst = append(dst, post...)
	dst = append(dst, `","count":`...)
	dst = strconv.AppendInt(dst, count, 10)
	dst = append(dst, `,"liked":`...)
	dst = strconv.AppendBool(dst, liked)
	return append(dst, "}\n"...)
}

// LikedPost is one entry of a user's likes (GET /me/likes): the post and when the user liked it.
type LikedPost struct {
	PostID  string    `json:"post_id"`
	LikedAt time.Time `json:"liked_at"`
}

// UserLikesPage is one page of a user's likes, newest first.
type UserLikesPage struct {
	UserID     string      `json:"user_id"`
	Likes      []LikedPost `json:"likes"`
	NextCursor string      `json:"next_cursor"`
}

// Liker is one entry of a post's likers (GET /likes/{postID}/users): an object, not a bare id, so
// that a field (a name, an avatar a site joins in) can be added without breaking clients.
type Liker struct {
	UserID string `json:"user_id"`
}

// LikersPage is one page of a post's likers, newest first, with the post's count.
type LikersPage struct {
	PostID     string  `json:"post_id"`
	Count      int64   `json:"count"`
	Users      []Liker `json:"users"`
	NextCursor string  `json:"next_cursor"`
}

// Erased is the answer to an erasure of a user's likes (DELETE /me/likes): how many it removed.
type Erased struct {
	UserID  string `json:"user_id"`
	Removed int    `json:"removed"`
}

// Unconfirmed is the body of the 503 that does not promise "not applied": a change that Redis
// applied on its primary but that fewer replicas than REDIS_ACK_REPLICAS confirmed in time, or a
// change whose call Redis did not answer in time (a timeout or a lost connection mid-call: it may
// have run). The change may stay (a read shows it; the replicas get it as they catch up) or be
// lost with the primary if that fails over before they do. A client retries it as any 503: the
// dedup key makes a retried like count once. Every other 503 is `{"error": ...}` alone, and
// promises that the change was not applied and never will be.
type Unconfirmed struct {
	Error       string `json:"error"`
	Unconfirmed bool   `json:"unconfirmed"` // always true
}
