package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/likes/likes/loadgen/internal/churn"
	"github.com/likes/likes/loadgen/internal/ramp"
	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/worker"
	"github.com/likes/likes/pkg/envflag"
)

// workerGCPercent is a worker's GOGC unless the environment sets one (runWorker says why).
const workerGCPercent = 25

const usage = `usage: loadgen ramp [flags]     ramp viewers and likes against a running deployment
       loadgen ramp --help        list the ramp's flags
       loadgen churn [flags]      open short-lived streams at a steady rate (soak); --help lists flags
       loadgen compare BEFORE.json AFTER.json [--html FILE]
                                  two ramps (--json) side by side, and one line on what changed
       loadgen nchan-bridge [flags]
                                  forward the writer's Redis PUBLISHes to an Nchan publisher (the
                                  Nchan side-by-side benchmark); --help lists flags
       loadgen procmetrics [flags]
                                  serve /metrics (CPU, memory) of a process and its children read
                                  from /proc, for a node without /metrics (nginx); --help lists flags
       loadgen worker             (internal) hold viewers for a ramp, driven over stdin/stdout

Each of a ramp's likes is by a fresh user. By default (--identity session, LOADGEN_IDENTITY) it
carries a session token for that user, signed with the deployment's session key, which loadgen
reads from Redis as the writers do: the ramp needs --redis or --redis-sentinels, and, if the
deployment changed it, its SESSION_KEY_ROTATE (--session-key-rotate). A deployment whose Redis
keeps the session keys to the writers (ACL users) uses --identity bench instead: the token is for
a load-test user (bench-...), signed with the key of --bench-key-file (LOADGEN_BENCH_KEY_FILE),
which the writers accept when started with the same key in BENCH_SESSION_KEY_FILE; no Redis is
read for it. --identity header names the user in X-User-ID, for writers run with
TRUST_USER_HEADER=true.
`

// run dispatches the subcommand. The OS is passed in so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return errors.New("missing command")
	}
	switch args[1] {
	case "ramp":
		return runRamp(ctx, args, getenv, stdout, stderr)
	case "churn":
		return runChurn(ctx, args, getenv, stdout, stderr)
	case "compare":
		return runCompare(args, stdout, stderr)
	case "nchan-bridge":
		return runNchanBridge(ctx, args, getenv, stdout, stderr)
	case "procmetrics":
		return runProcMetrics(ctx, args, getenv, stderr)
	case "worker":
		return runWorker(ctx, stdin, stdout, getenv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[1])
}

func runRamp(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, out, err := loadConfig(ctx, args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	res, runErr := ramp.Run(ctx, cfg, stderr)
	if res == nil {
		return runErr
	}
	return errors.Join(runErr, write(res, out, stdout))
}

// write prints the result (table, or JSON with --json) and writes the CSV and HTML files asked for.
func write(res *report.Result, out outputs, stdout io.Writer) error {
	var err error
	if out.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = report.Table(stdout, res)
	}
	if out.csv != "" {
		err = errors.Join(err, writeFile(out.csv, res, report.CSV))
	}
	if out.html != "" {
		err = errors.Join(err, writeFile(out.html, res, report.HTML))
	}
	return err
}

func writeFile[T any](path string, v T, f func(io.Writer, T) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(file, v); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return file.Close()
}

// runWorker serves a coordinator over stdin/stdout. It ignores Ctrl-C, which the terminal sends
// to the whole process group: the coordinator decides when workers stop (it closes their stdin),
// so it can still collect and print what was measured.
// LOADGEN_WORKER_CPUPROFILE, when set, is a directory that receives a CPU profile of each worker,
// to see where the generator's own time goes.
//
// A worker's heap is almost all viewers, which live as long as the run: once they are connected it
// allocates next to nothing (an event is decoded in place), so collecting at 25% growth instead of
// Go's 100% costs a few collections during the connect ramp and keeps the heap at 1.25x, not 2x,
// what it holds; the viewers are the generator's memory at a million. GOGC, when set, wins.
func runWorker(ctx context.Context, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(workerGCPercent)
	}
	signal.Ignore(os.Interrupt)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	if profileDir := getenv("LOADGEN_WORKER_CPUPROFILE"); profileDir != "" {
		f, err := os.Create(filepath.Join(profileDir, fmt.Sprintf("worker-%d.pprof", os.Getpid())))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return worker.Serve(ctx, stdin, stdout)
}

// runChurn opens and drops streams at a steady rate and prints what happened to them as JSON.
func runChurn(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cfg churn.Config
	s := envflag.New("loadgen churn", getenv, stderr)
	s.List(&cfg.Fanout, "fanout", "LOADGEN_FANOUT", "http://127.0.0.1:8090", "fanout-svc base URLs, comma-separated")
	s.Float(&cfg.Rate, "rate", "LOADGEN_CHURN_RATE", 100, "streams opened per second")
	s.Duration(&cfg.Hold, "hold", "LOADGEN_CHURN_HOLD", time.Second, "how long each stream stays open")
	s.Duration(&cfg.Duration, "duration", "LOADGEN_CHURN_DURATION", time.Minute, "how long to churn")
	s.Int(&cfg.Posts, "posts", "LOADGEN_CHURN_POSTS", 10, "posts the streams follow (churn-0 .. churn-N-1)")
	s.String(&cfg.Prefix, "post-prefix", "LOADGEN_CHURN_PREFIX", "churn-", "post id prefix")
	if err := s.Parse(args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	res, err := churn.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// runCompare reads two `loadgen ramp --json` results and prints them side by side, with the
// summary line first; --html also writes the page with both ramps on each chart.
func runCompare(args []string, stdout, stderr io.Writer) error {
	var htmlPath string
	s := envflag.New("loadgen compare", nil, stderr)
	s.String(&htmlPath, "html", "", "", "also write a self-contained HTML page with both ramps on each chart to this file")
	s.FS.Usage = func() {
		fmt.Fprintln(stderr, "usage: loadgen compare BEFORE.json AFTER.json [--html FILE]")
		s.FS.PrintDefaults()
	}
	// The files come first and the flags after them, so parse again after each file name.
	var files []string
	for rest := args[2:]; ; rest = rest[1:] {
		if err := s.FS.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
		if rest = s.FS.Args(); len(rest) == 0 {
			break
		}
		files = append(files, rest[0])
	}
	if len(files) != 2 {
		s.FS.Usage()
		return fmt.Errorf("compare wants two result files, BEFORE and AFTER; got %d", len(files))
	}
	var res [2]*report.Result
	for k, path := range files {
		var err error
		if res[k], err = readResult(path); err != nil {
			return err
		}
	}
	c, err := report.Compare(res[0], res[1])
	if err != nil {
		return fmt.Errorf("compare %s and %s: %w", files[0], files[1], err)
	}
	err = report.CompareTable(stdout, c)
	if htmlPath != "" {
		err = errors.Join(err, writeFile(htmlPath, c, report.CompareHTML))
	}
	return err
}

func readResult(path string) (*report.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := report.ReadResult(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}
