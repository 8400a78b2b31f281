package sessiontoken

import (
	"errors"
	"testing"
	"time"

	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/redistest"
	"github.com/likes/likes/testkit/sessiontokentest"
)

func follow(t *testing.T, k *Keyring, o FollowOptions) *Follower {
	t.Helper()
	f, err := Follow(ctx, k, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// TestFollowerHandover: the follower signs with the current key from the start; after a rotation
// it keeps the old key until the new one has been current for Handover, then takes it.
func TestFollowerHandover(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	k := newKeyring(t, srv.Client(t), testOptions(clk))
	f := follow(t, k, FollowOptions{Every: time.Hour, Handover: 2 * time.Minute}) // refreshed by hand
	oldKID, _ := mustSigning(t, k)
	if got := f.Key().ID; got != oldKID {
		t.Fatalf("follower starts with %s; want the current key %s", got, oldKID)
	}
	clk.Advance(time.Hour) // the next period
	newKID, newSecret := mustSigning(t, k)
	for _, step := range []time.Duration{0, time.Minute, time.Minute - time.Second} {
		clk.Advance(step)
		f.refresh()
		if got := f.Key().ID; got != oldKID {
			t.Fatalf("before the handover the follower signs with %s; want still %s", got, oldKID)
		}
	}
	clk.Advance(time.Second)
	f.refresh()
	if got := f.Key(); got.ID != newKID || string(got.Secret) != string(newSecret) {
		t.Fatalf("after the handover the follower signs with %s; want %s", got.ID, newKID)
	}
}

// TestFollowerKeepsKeyWithoutRedis: a follower cannot start without a key, and one that has a key
// keeps it while Redis is down, even past a rotation.
func TestFollowerKeepsKeyWithoutRedis(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	k := newKeyring(t, srv.Client(t), testOptions(clk))
	f := follow(t, k, FollowOptions{Every: time.Hour, Handover: time.Nanosecond, Timeout: 100 * time.Millisecond})
	kid := f.Key().ID
	srv.Kill()
	clk.Advance(time.Hour)
	for range 2 { // with Redis up, the first would see the new key and the second take it
		f.refresh()
	}
	if got := f.Key().ID; got != kid {
		t.Errorf("with Redis down the follower switched from %s to %s", kid, got)
	}
	other := newKeyring(t, srv.Client(t), testOptions(clk))
	if _, err := Follow(ctx, other, FollowOptions{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Follow with Redis down: %v; want ErrUnavailable", err)
	}
}

// TestFollowerRefreshes: the follower's own goroutine takes the new key after a rotation.
func TestFollowerRefreshes(t *testing.T) {
	srv := redistest.Start(t)
	clk := sessiontokentest.NewClock(time.Hour)
	k := newKeyring(t, srv.Client(t), testOptions(clk))
	f := follow(t, k, FollowOptions{Every: 5 * time.Millisecond, Handover: time.Second})
	kid := f.Key().ID
	clk.Advance(time.Hour)
	poll.Until(t, 5*time.Second, "the follower takes the next period's key", func() bool {
		clk.Advance(time.Second) // the handover passes for a key the loop has seen
		return f.Key().ID != kid
	})
}
