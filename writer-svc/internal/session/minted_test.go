package session

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/likes/likes/pkg/sessiontoken"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
)

// TestMintedTokensVerify: tokens another signer on the writers' Redis mints with
// sessiontoken.Minter (loadgen, for the users of its likes) are session tokens to the writer, for
// their users: with the key the writers created, and with one the signer created itself at a
// rotation before any writer needed it.
func TestMintedTokensVerify(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	o := testOptions(clk)
	s := newIssuer(t, srv.Client(t), o)
	if err := s.Load(ctx); err != nil { // the writer's start creates the key
		t.Fatal(err)
	}
	// loadgen's view of the deployment: its rotation and its tokens' life, nothing else.
	ring := sessiontoken.NewKeyring(srv.Client(t), testKeys, sessiontoken.KeyringOptions{
		Rotate: o.KeyRotate, Life: o.TTL + o.RefreshGrace, Now: clk.Now,
	}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	defer ring.Close()
	f, err := sessiontoken.Follow(ctx, ring, sessiontoken.FollowOptions{Every: 5 * time.Millisecond, Handover: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := sessiontoken.NewMinter(f, o.TTL)

	first := string(m.AppendToken(nil, []byte("lg1-u1"), clk.Now()))
	wantUser(t, s, first, "lg1-u1")
	if kid, _ := parsed(t, first); kid != f.Key().ID {
		t.Fatalf("minted under %s; want the follower's key %s", kid, f.Key().ID)
	}

	clk.Advance(o.KeyRotate) // a period no writer has signed in yet: the follower creates its key
	oldKID := f.Key().ID
	poll.Until(t, 5*time.Second, "the minter's follower takes the new period's key", func() bool {
		clk.Advance(time.Second) // past the handover of a key the follower has seen
		return f.Key().ID != oldKID
	})
	next := string(m.AppendToken(nil, []byte("lg1-u2"), clk.Now()))
	if kid, _ := parsed(t, next); kid == oldKID {
		t.Fatalf("minted under the old key %s after the handover", kid)
	}
	wantUser(t, s, next, "lg1-u2")
}
