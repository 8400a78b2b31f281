package sessiontoken

import (
	"fmt"
	"os"
	"strings"
)

// Benchmark sessions let a load generator sign the session tokens of its likes without the
// deployment's signing keys, which only the writers may read (pkg/redisacl). A writer started
// with a benchmark key (BENCH_SESSION_KEY_FILE) accepts tokens under BenchKeyID signed with it,
// for users whose ids begin with BenchUserPrefix and for no one else: a leaked benchmark key
// acts as load-test users, never as a real visitor. Real sessions' ids begin with "anon-", so
// the two never meet.
const (
	// BenchKeyID is the kid of benchmark tokens. It never names a key in Redis: a writer does not
	// look it up there.
	BenchKeyID = "bench"
	// BenchUserPrefix begins every user id a benchmark token may name.
	BenchUserPrefix = "bench-"
	// MinBenchKeyLen is the shortest benchmark key accepted: 32 bytes, as for HS256 secrets.
	MinBenchKeyLen = 32
)

// ReadBenchKey reads the benchmark key from path: the file's content without surrounding space.
func ReadBenchKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchmark session key: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < MinBenchKeyLen {
		return nil, fmt.Errorf("benchmark session key %s holds %d bytes; at least %d are needed", path, len(secret), MinBenchKeyLen)
	}
	return &Key{ID: BenchKeyID, Secret: []byte(secret)}, nil
}

// StaticKey is a KeySource of one key that never changes: a Minter's for benchmark tokens.
type StaticKey struct{ K *Key }

// Key returns the key.
func (s StaticKey) Key() *Key { return s.K }
