package likeapi

import (
	"context"
	"net/http"

	"github.com/likes/likes/pkg/clientip"
	"github.com/likes/likes/writer-svc/internal/bounded"
)

// newPosts bounds what one user, and one client address, can make Redis hold: every post id a
// like or a reaction names brings a post into existence (its count, version, likers and reaction
// keys, which never expire while it holds a like or a reaction), so without it one session reacting to post 1, 2, 3... would grow Redis
// and its replicas for as long as it ran. A like or reaction of a post this writer does not know
// spends one token of the user's bucket and one of the address's (NEW_POST_RATE,
// NEW_POST_ADDR_RATE, shared by all replicas through Redis); once a change of a post succeeded,
// the writer knows it exists and its likes pass free. A post that exists but that this writer has
// not yet seen (after a restart, say) costs its first likers a token each until one succeeds:
// the defaults leave room for that.
type newPosts struct {
	users, addrs Limiter
	known        *bounded.Map[struct{}]
}

// maxKnownPosts bounds the posts a writer remembers as existing (about 10 MiB); a post forgotten
// costs its next liker a token, nothing more.
const maxKnownPosts = 1 << 17

func newNewPosts(users, addrs Limiter) *newPosts {
	if users == nil && addrs == nil {
		return nil
	}
	return &newPosts{users: users, addrs: addrs, known: bounded.New[struct{}](maxKnownPosts)}
}

// admit spends the tokens a change of post costs user and the client address when post is new to
// this writer; a refusal is a limitedError (429 with Retry-After).
func (n *newPosts) admit(ctx context.Context, r *http.Request, clients clientip.Resolver, post, user string) error {
	if n == nil {
		return nil
	}
	if _, ok := n.known.Get(post); ok {
		return nil
	}
	if n.users != nil {
		if err := limit(ctx, n.users, "u:"+user, limitedError{newPost: true}); err != nil {
			return err
		}
	}
	if n.addrs != nil {
		return limit(ctx, n.addrs, "a:"+clientip.Source(clients.Addr(r)), limitedError{newPost: true, perAddr: true})
	}
	return nil
}

// exists records that a change of post succeeded: its next changes pass free.
func (n *newPosts) exists(post string) {
	if n != nil {
		n.known.Put(post, struct{}{}, nil)
	}
}
