package sessiontoken

import (
	"bytes"
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// The defaults of FileKeysOptions.
const (
	// DefaultKeyFilePoll is how often a key file is read again. Kubernetes updates a mounted
	// Secret in place (it writes the new files and swaps a symlink) and sends the process no
	// signal, nor does an operator's edit in a Compose volume, so the file is polled rather than
	// awaited on SIGHUP; reading a few hundred bytes every few seconds costs nothing, and comparing
	// the content rather than the mtime also catches a rewrite within the mtime's granularity.
	DefaultKeyFilePoll = 5 * time.Second
	// DefaultKeyFileHandover is how long a writer that sees a new last key keeps signing with the
	// one before (which every writer has): the new key verifies at once, but the other replicas
	// may read the file up to the kubelet's sync period (a minute by default) plus a poll later,
	// and would refuse its tokens until then.
	DefaultKeyFileHandover = 2 * time.Minute
)

// FileKeysOptions configure FileKeys; the zero value takes the defaults.
type FileKeysOptions struct {
	Poll     time.Duration    // how often the file is read again (DefaultKeyFilePoll)
	Handover time.Duration    // how long a new last key waits before it signs (DefaultKeyFileHandover); negative: none
	Now      func() time.Time // clock; time.Now when nil
}

func (o FileKeysOptions) withDefaults() FileKeysOptions {
	if o.Poll <= 0 {
		o.Poll = DefaultKeyFilePoll
	}
	if o.Handover == 0 {
		o.Handover = DefaultKeyFileHandover
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// FileKeys are the session signing keys of a key file (keyfile.go), kept out of Redis: only who
// can read the file can sign a session. It reads the file again every Poll; a file that became
// unreadable or malformed keeps the keys in memory (and is logged), so a bad edit never logs
// everyone out.
type FileKeys struct {
	path string
	o    FileKeysOptions
	log  *zap.Logger

	// reload serializes Reload; the fields after it are Reload's own.
	reload sync.Mutex
	raw    []byte // the content last read, valid or not: only a change is installed or logged
	rawErr string // and what was wrong with it

	mu    sync.RWMutex
	byID  map[string][]byte
	last  *Key      // the file's last key
	prev  *Key      // what signed before last appeared, while the handover lasts; nil: last signs
	since time.Time // when last was first seen

	stop chan struct{}
	done chan struct{}
}

// OpenKeyFile reads the key file at path, refusing a missing, malformed or short one, and polls
// it until Close.
func OpenKeyFile(path string, o FileKeysOptions, log *zap.Logger) (*FileKeys, error) {
	b, keys, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	f := &FileKeys{path: path, o: o.withDefaults(), log: log, raw: b, stop: make(chan struct{}), done: make(chan struct{})}
	f.install(keys, f.o.Now())
	log.Info("session keys read from a key file", zap.String("path", path), zap.Int("keys", len(keys)), zap.String("signing_kid", f.last.ID))
	go f.pollLoop()
	return f, nil
}

// Close stops polling and waits for the goroutine.
func (f *FileKeys) Close() {
	close(f.stop)
	<-f.done
}

// pollLoop reads the file every Poll until Close.
func (f *FileKeys) pollLoop() {
	defer close(f.done)
	t := time.NewTicker(f.o.Poll)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		_ = f.Reload() // logged there
	}
}

// Reload reads the file again and, if its content changed and parses, makes its keys the ones in
// use. A file that cannot be read or parsed changes nothing; the error is logged once, not at
// every poll.
func (f *FileKeys) Reload() error {
	f.reload.Lock()
	defer f.reload.Unlock()
	b, keys, err := readKeyFile(f.path)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	changed := !bytes.Equal(b, f.raw) || msg != f.rawErr
	f.raw, f.rawErr = b, msg
	switch {
	case !changed:
		return err
	case err != nil:
		f.log.Error("session key file unusable; keeping the keys in memory", zap.String("path", f.path), zap.Error(err))
		return err
	}
	f.install(keys, f.o.Now())
	f.log.Info("session keys reloaded", zap.String("path", f.path), zap.Int("keys", len(keys)), zap.String("last_kid", keys[len(keys)-1].ID))
	return nil
}

// install makes keys the ones in use. A new last key signs after the handover, while the key that
// signed until now is still in the file; the first keys read sign at once.
func (f *FileKeys) install(keys []Key, now time.Time) {
	byID := make(map[string][]byte, len(keys))
	for _, k := range keys {
		byID[k.ID] = k.Secret
	}
	last := &keys[len(keys)-1]
	f.mu.Lock()
	defer f.mu.Unlock()
	if !sameKey(last, f.last) {
		signing := f.signingLocked(now)
		f.prev, f.since = nil, now
		if signing != nil && f.o.Handover > 0 && bytes.Equal(byID[signing.ID], signing.Secret) {
			f.prev = signing
		}
	} else if f.prev != nil && !bytes.Equal(byID[f.prev.ID], f.prev.Secret) {
		f.prev = nil // removed from the file: it may no longer sign
	}
	f.byID, f.last = byID, last
}

// signingLocked is the key that signs at now; f.mu held.
func (f *FileKeys) signingLocked(now time.Time) *Key {
	if f.prev != nil && now.Sub(f.since) < f.o.Handover {
		return f.prev
	}
	return f.last
}

// Signing returns the key that signs now: the file's last, or during a handover the one before.
func (f *FileKeys) Signing(context.Context) (string, []byte, error) {
	f.mu.RLock()
	k := f.signingLocked(f.o.Now())
	f.mu.RUnlock()
	return k.ID, k.Secret, nil
}

// Verifying returns the secret of key kid if the file holds it.
func (f *FileKeys) Verifying(_ context.Context, kid string) ([]byte, error) {
	f.mu.RLock()
	s, ok := f.byID[kid]
	f.mu.RUnlock()
	if !ok {
		return nil, errUnknownKey
	}
	return s, nil
}
