package deploytest

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// binDir holds the programs built by buildProgram; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploytest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploytest:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		code = leaked()
	}
	os.Exit(code)
}

// leaked reports goroutines that outlived the tests (goleak), as 1 for the exit code.
func leaked() int {
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "deploytest: goroutines left running:", err)
		return 1
	}
	return 0
}

// program is one likes binary, built once per test binary run.
type program struct {
	once sync.Once
	path string
	err  error
}

var (
	programsMu sync.Mutex
	programs   = map[string]*program{}
)

// buildProgram builds ./<name> the way build/Dockerfile does (CGO off, -trimpath, stripped) and
// returns the binary's path.
func buildProgram(t *testing.T, name string) string {
	t.Helper()
	programsMu.Lock()
	p, ok := programs[name]
	if !ok {
		p = &program{}
		programs[name] = p
	}
	programsMu.Unlock()
	p.once.Do(func() {
		if _, err := os.Stat(filepath.Join(repoRoot, name, "main.go")); err != nil {
			p.err = fmt.Errorf("%s/main.go missing: the program is not written yet (%w)", name, err)
			return
		}
		out := filepath.Join(binDir, filepath.Base(name))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// go test puts its own toolchain first on PATH, so "go" is the go running this test.
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./"+name)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			p.err = fmt.Errorf("go build ./%s: %w\n%s", name, err, msg)
			return
		}
		p.path = out
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.path
}

// helpText runs the program with args followed by --help and returns what it printed. Programs
// exit non-zero after --help (flag.ErrHelp is an error), so the exit status is not checked; the
// caller checks the text.
func helpText(t *testing.T, name string, args ...string) string {
	t.Helper()
	bin := buildProgram(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--help")...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{} // the defaults, not this machine's environment
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v --help did not exit within 30s", name, args)
	}
	return out.String()
}

var (
	envInHelp  = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)
	flagInHelp = regexp.MustCompile(`(?m)^\s+-{1,2}([a-zA-Z0-9][a-zA-Z0-9-]*)`)
)

// helpEnv returns the environment variables named in a program's --help.
func helpEnv(help string) map[string]bool {
	names := map[string]bool{}
	for _, m := range envInHelp.FindAllStringSubmatch(help, -1) {
		names[m[1]] = true
	}
	return names
}

// helpFlags returns the flag names listed in a program's --help.
func helpFlags(help string) map[string]bool {
	names := map[string]bool{}
	for _, m := range flagInHelp.FindAllStringSubmatch(help, -1) {
		names[m[1]] = true
	}
	return names
}

// programEnv returns the environment variables that program reads, failing the test when its help
// names none (a sign that --help printed something else, such as a crash).
func programEnv(t *testing.T, name string) map[string]bool {
	t.Helper()
	help := helpText(t, name)
	env := helpEnv(help)
	if !env["LISTEN_ADDR"] || !env["REDIS_URL"] {
		t.Fatalf("%s --help names no LISTEN_ADDR/REDIS_URL; every service reads both. Output:\n%s", name, help)
	}
	return env
}

// assertStatic fails unless the binary at path is statically linked: the distroless static image
// has no libc, so a dynamically linked binary would not start there.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header; want a static binary (CGO_ENABLED=0)", filepath.Base(path), prog.Type)
		}
	}
}
