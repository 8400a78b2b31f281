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
// acts as load-test users, never as a real visitor. Real sessions' ids begin with "anon-", and a
// writer refuses site and gateway identities in the namespace, so the two never meet.
const (
	// BenchKeyID is the kid of benchmark tokens. It is not a unix second, so it can never name a
	// key of the Keyring, and a writer settles it before the Keyring is asked: it never causes a
	// lookup in Redis, whether benchmark mode is on or off.
	BenchKeyID = "bench"
	// BenchUserPrefix begins every user id a benchmark token may name. It is a valid start of a
	// user id (ids.ValidUserID: printable ASCII, no space, no colon) that needs no escaping in
	// JSON, a URL or a Redis key, and it reads as what it is in a key listing or a log line.
	BenchUserPrefix = "bench-"
	// MinBenchKeyLen is the shortest benchmark key accepted: the HS256 minimum, as for every
	// session key.
	MinBenchKeyLen = MinSecretLen
)

// IsBenchUser reports whether user is in the benchmark namespace: the only users a benchmark
// token may name, and users nothing else may name.
func IsBenchUser(user string) bool { return strings.HasPrefix(user, BenchUserPrefix) }

// ReadBenchKey reads the benchmark key from path: the file's content without surrounding white
// space (a trailing newline is how most tools write a secret), at least MinBenchKeyLen bytes.
// The writer (BENCH_SESSION_KEY_FILE) and loadgen (--bench-key-file) read it with this one
// function, so that they cannot disagree on what the key is.
func ReadBenchKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchmark session key: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < MinBenchKeyLen {
		return nil, fmt.Errorf("benchmark session key %s holds %d bytes; at least %d are needed (a random string, e.g. openssl rand -base64 48)",
			path, len(secret), MinBenchKeyLen)
	}
	return &Key{ID: BenchKeyID, Secret: []byte(secret)}, nil
}

// StaticKey is a KeySource of one key that never changes: a Minter's for benchmark tokens, whose
// key is not rotated and is not kept in Redis.
type StaticKey struct{ K *Key }

var _ KeySource = StaticKey{}

// Key returns the key.
func (s StaticKey) Key() *Key { return s.K }
