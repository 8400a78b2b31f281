package sessiontoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strconv"
	"time"
)

// KeySource gives the key to sign with now; a Follower is one.
type KeySource interface {
	Key() *Key
}

// The fixed parts of a token's claims, in the order (and with the encoding) that encoding/json
// gives Claims, so that a minted token is byte for byte the one Sign makes.
const (
	claimsSub      = `{"sub":"`
	claimsAudExp   = `","aud":["` + Audience + `"],"exp":`
	claimsIat      = `,"iat":`
	claimsStart    = `,"sid_start":`
	claimsEnd      = `}`
	headerKIDStart = `{"alg":"HS256","kid":"`
	headerKIDEnd   = `","typ":"JWT"}`
)

var b64 = base64.RawURLEncoding

// Minter appends session tokens to byte slices for a sender of many likes, each by a fresh user
// whose session begins as it likes. A token costs one HMAC-SHA256 and no allocation: the header
// segment is encoded once per key, the claims are appended by hand, and the HMAC is made once per
// key and reset per token. It signs with its source's key, and follows when that key changes.
//
// A Minter is not safe for concurrent use: one per goroutine.
type Minter struct {
	keys   KeySource
	ttl    int64 // seconds
	key    *Key
	head   []byte // the header segment of key, and the dot after it
	mac    hash.Hash
	claims []byte
	sum    []byte
}

// NewMinter returns a Minter signing with the keys of src tokens valid for ttl (whole seconds).
func NewMinter(src KeySource, ttl time.Duration) *Minter {
	return &Minter{keys: src, ttl: int64(ttl / time.Second), sum: make([]byte, 0, sha256.Size)}
}

// AppendToken appends to dst a token for user in a session begun at now, issued then and valid for
// the Minter's ttl: the same token Sign makes of NewClaims(user, now, now, now+ttl). The user must
// be a valid user id (ids.ValidUserID: printable ASCII); the characters encoding/json escapes are
// escaped as it does.
func (m *Minter) AppendToken(dst, user []byte, now time.Time) []byte {
	if k := m.keys.Key(); k != m.key {
		m.use(k)
	}
	t := now.Unix()
	m.claims = append(m.claims[:0], claimsSub...)
	m.claims = appendEscaped(m.claims, user)
	m.claims = append(m.claims, claimsAudExp...)
	m.claims = strconv.AppendInt(m.claims, t+m.ttl, 10)
	m.claims = append(m.claims, claimsIat...)
	m.claims = strconv.AppendInt(m.claims, t, 10)
	m.claims = append(m.claims, claimsStart...)
	m.claims = strconv.AppendInt(m.claims, t, 10)
	m.claims = append(m.claims, claimsEnd...)
	c := m.claims

	start := len(dst)
	dst = append(dst, m.head...)
	dst = b64.AppendEncode(dst, c)
	m.mac.Reset()
	m.mac.Write(dst[start:])
	m.sum = m.mac.Sum(m.sum[:0])
	dst = append(dst, '.')
	return b64.AppendEncode(dst, m.sum)
}

// use makes k the key tokens are signed with. A key id is a unix second, StaticKID or BenchKeyID,
// which JSON writes as it is.
func (m *Minter) use(k *Key) {
	m.key = k
	m.head = append(b64.AppendEncode(m.head[:0], []byte(headerKIDStart+k.ID+headerKIDEnd)), '.')
	m.mac = hmac.New(sha256.New, k.Secret)
}

// appendEscaped appends s as the inside of a JSON string the way encoding/json writes it, for the
// bytes a valid user id may hold: `"` and `\` escaped, and `<`, `>` and `&` as \u00XX (its HTML
// escaping). Other bytes are copied: a user id with control characters or non-ASCII is not valid,
// and a writer refuses its token.
func appendEscaped(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	for _, c := range s {
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '<', '>', '&':
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
