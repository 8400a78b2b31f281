package session

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (the keyring's refresh loop).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
