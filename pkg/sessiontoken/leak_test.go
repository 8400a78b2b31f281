package sessiontoken

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any of them leaves a goroutine running (a keyring's reload
// loop, a follower's refresh).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
