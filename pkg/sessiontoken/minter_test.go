package sessiontoken

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// fixedKeys is a key source whose key the test sets.
type fixedKeys struct{ key *Key }

func (f *fixedKeys) Key() *Key { return f.key }

var (
	testSecret = []byte("0123456789abcdef0123456789abcdef")
	testNow    = time.Unix(1764633601, 0)
)

// TestMinterMatchesSign: a minted token is byte for byte the one golang-jwt makes of the same
// claims, for user ids with every character a valid id may hold (those JSON escapes among them),
// and it is appended after what dst held.
func TestMinterMatchesSign(t *testing.T) {
	src := &fixedKeys{&Key{ID: "1764633600", Secret: testSecret}}
	m := NewMinter(src, time.Hour)
	var printable []byte
	for c := byte('!'); c < 0x7f; c++ {
		if c != ':' {
			printable = append(printable, c)
		}
	}
	for _, user := range []string{"lg1-u1", "anon-AbC_d-9", `q"uo\te`, "<script>&amp;", string(printable)} {
		got := m.AppendToken([]byte("Bearer "), []byte(user), testNow)
		want, err := Sign(NewClaims(user, testNow.Unix(), testNow.Unix(), testNow.Add(time.Hour).Unix()), src.key.ID, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "Bearer "+want {
			t.Errorf("user %q:\nminted %s\nSign   Bearer %s", user, got, want)
		}
	}
}

// TestMinterFollowsKey: when the source's key changes, the next token is signed with the new
// one, and names it.
func TestMinterFollowsKey(t *testing.T) {
	src := &fixedKeys{&Key{ID: "3600", Secret: testSecret}}
	m := NewMinter(src, time.Hour)
	first := string(m.AppendToken(nil, []byte("u"), testNow))
	src.key = &Key{ID: "7200", Secret: []byte("another-secret-of-thirty-two-b!!")}
	second := string(m.AppendToken(nil, []byte("u"), testNow))
	for _, tt := range []struct {
		raw string
		key *Key
	}{{first, &Key{ID: "3600", Secret: testSecret}}, {second, src.key}} {
		var c Claims
		tok, err := jwt.NewParser(jwt.WithTimeFunc(func() time.Time { return testNow })).ParseWithClaims(tt.raw, &c,
			func(*jwt.Token) (any, error) { return tt.key.Secret, nil })
		if err != nil || tok.Header["kid"] != tt.key.ID || c.Subject != "u" {
			t.Errorf("token %s: %v, kid %v; want one of key %s for u", tt.raw, err, tok.Header["kid"], tt.key.ID)
		}
	}
}

// TestMinterAllocatesNothing: once dst has room, a token costs no allocation; a key change may.
func TestMinterAllocatesNothing(t *testing.T) {
	m := NewMinter(&fixedKeys{&Key{ID: "1764633600", Secret: testSecret}}, time.Hour)
	dst := m.AppendToken(nil, []byte("lg1-u1"), testNow)
	user := []byte("lg1-u1zz")
	if n := testing.AllocsPerRun(1000, func() { dst = m.AppendToken(dst[:0], user, testNow) }); n != 0 {
		t.Errorf("%v allocations per token; want 0", n)
	}
	if !strings.HasPrefix(string(dst), "eyJ") || strings.Count(string(dst), ".") != 2 {
		t.Errorf("token %q is no JWT", dst)
	}
}

// BenchmarkMint is a token as loadgen makes one per like; BenchmarkSign the same token through
// golang-jwt, for comparison.
func BenchmarkMint(b *testing.B) {
	m := NewMinter(&fixedKeys{&Key{ID: "1764633600", Secret: testSecret}}, time.Hour)
	user := []byte("lgt3x9k2-u1b4c")
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = m.AppendToken(dst[:0], user, testNow)
	}
}

func BenchmarkSign(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(NewClaims("lgt3x9k2-u1b4c", testNow.Unix(), testNow.Unix(), testNow.Add(time.Hour).Unix()), "1764633600", testSecret); err != nil {
			b.Fatal(err)
		}
	}
}
