package contract

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds writer-svc and fanout-svc, built once by TestMain.
var binDir string

// TestMain builds the services once, runs the tests, and fails the package if a test leaves a
// goroutine behind (the process watchers and the RSS watchdog all end with their test).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "likes-contract-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "build services:", err)
	} else {
		code = goleakRun(m)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// goleakRun runs m and then looks for leaked goroutines, as goleak.VerifyTestMain does, but
// returns the code so that TestMain can remove the binaries.
func goleakRun(m *testing.M) int {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// build compiles the two services into dir, race-enabled when this test binary is (raceEnabled):
// `go test -race ./...` has then compiled their packages with -race already, so the build is
// mostly cached, and the fuzzer's hostile input meets the race detector too.
func build(dir string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./writer-svc", "./fanout-svc")...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}
