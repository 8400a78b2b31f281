package sessiontoken

import (
	"context"
	"sync/atomic"
	"time"
)

// Key is a signing key and its id.
type Key struct {
	ID     string
	Secret []byte
}

// FollowOptions configure a Follower; the zero value takes the defaults.
type FollowOptions struct {
	// Every is how often the keyring is asked for its current key (default 1s).
	Every time.Duration
	// Handover is how long a new current key must have been seen before it signs (default twice
	// DefaultReload). A writer learns of a key another signer created at its next reload, or by a
	// lookup it allows once a second: a burst of tokens under a key it has not loaded would be
	// refused but for the first. The previous key verifies for far longer (Life past its period),
	// so signing with it a little longer costs nothing.
	Handover time.Duration
	// Timeout bounds one request to the keyring, which may go to Redis (default 5s).
	Timeout time.Duration
}

func (o FollowOptions) withDefaults() FollowOptions {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.Handover <= 0 {
		o.Handover = 2 * DefaultReload
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	return o
}

// Follower keeps the key a hot path signs with: the keyring's current key, asked for by a
// goroutine of its own so that no token waits on Redis, and read by each Minter with one atomic
// load. When the keyring cannot be asked (Redis down at a rotation), the key in use stays: it
// verifies for a long while yet.
type Follower struct {
	ring *Keyring
	o    FollowOptions
	cur  atomic.Pointer[Key]

	// only the refresh goroutine:
	next  *Key      // the keyring's current key, not yet signing
	since time.Time // when next was first seen

	stop chan struct{}
	done chan struct{}
}

// Follow returns a Follower of ring, signing with its current key at once (creating it in Redis
// if no signer has yet); an error is a key that could not be had. Close stops it.
func Follow(ctx context.Context, ring *Keyring, o FollowOptions) (*Follower, error) {
	f := &Follower{ring: ring, o: o.withDefaults(), stop: make(chan struct{}), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
	defer cancel()
	kid, secret, err := ring.Signing(ctx)
	if err != nil {
		return nil, err
	}
	f.cur.Store(&Key{ID: kid, Secret: secret})
	go f.loop()
	return f, nil
}

// Key returns the key to sign with now.
func (f *Follower) Key() *Key { return f.cur.Load() }

// Close stops following and waits for the goroutine.
func (f *Follower) Close() {
	close(f.stop)
	<-f.done
}

func (f *Follower) loop() {
	defer close(f.done)
	t := time.NewTicker(f.o.Every)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.refresh()
	}
}

// refresh asks the keyring for its current key and hands over to it once it has been current for
// Handover.
func (f *Follower) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	kid, secret, err := f.ring.Signing(ctx)
	if err != nil {
		return // keep signing with the key in use; the next tick asks again
	}
	now := f.ring.o.Now()
	switch {
	case kid == f.cur.Load().ID:
		f.next = nil
	case f.next == nil || f.next.ID != kid:
		f.next, f.since = &Key{ID: kid, Secret: secret}, now
	case now.Sub(f.since) >= f.o.Handover:
		f.cur.Store(f.next)
		f.next = nil
	}
}
