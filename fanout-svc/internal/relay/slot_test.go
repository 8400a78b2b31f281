package relay

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/likes/likes/testkit/redistest"
)

// TestKeySlotMatchesRedis compares keySlot with CLUSTER KEYSLOT of a real cluster-mode server,
// on hash-tag edge cases and random keys.
func TestKeySlotMatchesRedis(t *testing.T) {
	srv := redistest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	give := []string{"", "a", "{", "}", "{}", "{}a", "a{}b{c}", "a{b}c", "a{b}{c}", "{a", "a}b{c}",
		"likes:{42}:ch", "likes:{42}:count", "likes:{post_with-dash}:u:alice", "123456789", "\xff\x00{\x80}"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = "ab{}:-_0123456789"[rng.IntN(17)]
		}
		give = append(give, string(b))
	}
	for _, key := range give {
		res, err := srv.Do("CLUSTER", "KEYSLOT", key)
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", key, err)
		}
		if want, _ := res.(int64); keySlot(key) != int(want) {
			t.Errorf("keySlot(%q) = %d; want %d", key, keySlot(key), want)
		}
	}
}

func TestParseMoved(t *testing.T) {
	tests := []struct {
		give     string
		wantSlot int
		wantAddr string
		wantOK   bool
	}{
		{give: "MOVED 3999 127.0.0.1:6381", wantSlot: 3999, wantAddr: "127.0.0.1:6381", wantOK: true},
		{give: "MOVED 16384 127.0.0.1:6381"},
		{give: "MOVED x 127.0.0.1:6381"},
		{give: "ASK 3999 127.0.0.1:6381"},
		{give: "CROSSSLOT Keys in request don't hash to the same slot"},
		{give: "CLUSTERDOWN The cluster is down"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			slot, addr, ok := parseMoved(errors.New(tt.give))
			if slot != tt.wantSlot || addr != tt.wantAddr || ok != tt.wantOK {
				t.Errorf("parseMoved = %d, %q, %v; want %d, %q, %v", slot, addr, ok, tt.wantSlot, tt.wantAddr, tt.wantOK)
			}
		})
	}
}
