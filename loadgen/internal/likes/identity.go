package likes

import (
	"strconv"
	"time"

	"github.com/likes/likes/pkg/sessiontoken"
)

// WithSessions makes each like carry a session token for its fresh user (Authorization: Bearer),
// signed with src's keys as the writers' own (sessiontoken.Minter), instead of naming the user in
// X-User-ID, which a writer believes only with TRUST_USER_HEADER=true and a balancer in front of
// it may strip. Asking the writer for a session per like would make every like two requests, and
// make SESSION_RATE, not the writer, the limit.
func WithSessions(src sessiontoken.KeySource) Option {
	return func(l *Load) { l.keys = src }
}

// identityHeader is the header that names a like's user, up to the part that differs per like.
func (l *Load) identityHeader() string {
	if l.keys != nil {
		return "Authorization: Bearer "
	}
	return "X-User-ID: " + l.userBase
}

// appendIdentity appends the rest of the identity header of the fresh user numbered seq: its
// number, or a token for its id (minted with c's Minter, made at its first like), valid from now.
// Neither allocates once c's buffers have grown.
func (l *Load) appendIdentity(dst []byte, c *conn, seq int64, now time.Time) []byte {
	if l.keys == nil {
		return strconv.AppendInt(dst, seq, 36)
	}
	if c.mint == nil {
		c.mint = sessiontoken.NewMinter(l.keys, sessiontoken.DefaultTTL)
	}
	c.user = strconv.AppendInt(append(c.user[:0], l.userBase...), seq, 36)
	return c.mint.AppendToken(dst, c.user, now)
}
