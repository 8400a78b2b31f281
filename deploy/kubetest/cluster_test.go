package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/likes/likes/deploy/helm/helmtest"
	"github.com/likes/likes/testkit/clienttest"
)

// repoRoot is the module root, two levels above this package.
var repoRoot = func() string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// The cluster's paths, as scripts/kube/lib.sh sets them.
const (
	kubeVersion = "v1.34.2"
	kubeconfig  = "/var/lib/likes-kube/admin.kubeconfig"
	kubeLogs    = "/var/lib/likes-kube/log"
	namespace   = "likes"
	release     = "likes" // the chart's release in namespace
)

// cluster is what TestMain found or started.
var cluster struct {
	kubectl string // the kubectl of the cluster's version
	skip    string // non-empty: the suite cannot run here, and why
	started bool   // this run started it, and takes it down
}

func TestMain(m *testing.M) {
	if err := startCluster(); err != nil {
		cluster.skip = err.Error()
		fmt.Fprintf(os.Stderr, "kubetest: SKIPPING the Kubernetes suite: %s\n", cluster.skip)
	}
	code := m.Run()
	clienttest.CloseIdleConnections()
	if code != 0 && cluster.skip == "" {
		dumpCluster()
	}
	if cluster.started && os.Getenv("LIKES_KUBE_KEEP") != "1" {
		if out, err := script(5*time.Minute, "scripts/kube-down.sh"); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: kube-down failed: %v\n%s\n", err, out)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// dumpCluster prints what a failed run needs to be understood after the cluster is gone: the
// Pods, the recent events, the services' last log lines and the tails of the kubelet's and
// containerd's logs.
func dumpCluster() {
	for _, args := range [][]string{
		{"get", "pods", "-A", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"-n", namespace, "logs", "-l", "app.kubernetes.io/name=fanout-svc", "--tail=20", "--prefix"},
		{"-n", namespace, "logs", "-l", "app.kubernetes.io/name=writer-svc", "--tail=20", "--prefix"},
	} {
		out, err := kubectl(30*time.Second, "", args...)
		fmt.Fprintf(os.Stderr, "kubetest: kubectl %s (%v):\n%s\n", strings.Join(args, " "), err, tail(out, 8000))
	}
	for _, log := range []string{"kubelet.log", "containerd.log"} {
		b, err := os.ReadFile(filepath.Join(kubeLogs, log))
		fmt.Fprintf(os.Stderr, "kubetest: the end of %s (%v):\n%s\n", log, err, tail(string(b), 8000))
	}
}

// startCluster starts the cluster unless it runs already. It returns why where the suite cannot
// run on this machine, and exits the process where the script fails (a cluster that should start
// and does not is a failure, not a skip).
func startCluster() error {
	if os.Getenv("LIKES_KUBE") == "0" {
		return errors.New("LIKES_KUBE=0")
	}
	if os.Geteuid() != 0 {
		return errors.New("not root (the kubelet, containerd and the bridge need it)")
	}
	docker := os.Getenv("DOCKER")
	if docker == "" {
		docker = "docker"
	}
	if err := exec.Command(docker, "info").Run(); err != nil {
		return fmt.Errorf("no Docker engine answers (%s info: %w); the images come from it", docker, err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	cache := os.Getenv("KUBE_CACHE")
	if cache == "" {
		cache = filepath.Join(home, ".cache", "likes", "kube")
	}
	cluster.kubectl = filepath.Join(cache, kubeVersion, "bin", "kubectl")
	if _, err := os.Stat(kubeconfig); err == nil && exec.Command(cluster.kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").Run() == nil {
		fmt.Fprintln(os.Stderr, "kubetest: using the cluster that runs already (left running afterwards)")
		return nil
	}
	start := time.Now()
	cluster.started = true
	out, err := script(45*time.Minute, "scripts/kube-offline.sh")
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: scripts/kube-offline.sh failed: %v\n%s\n", err, tail(out, 6000))
		if out, err := script(5*time.Minute, "scripts/kube-down.sh"); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: kube-down failed too: %v\n%s\n", err, out)
		}
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%skubetest: cluster up in %v\n", out, time.Since(start).Round(time.Second))
	return nil
}

// script runs one of the repository's scripts from the repository root.
func script(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, name), args...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// needCluster skips the test, loudly, when TestMain found no cluster.
func needCluster(t *testing.T) {
	t.Helper()
	if cluster.skip != "" {
		fmt.Fprintf(os.Stderr, "kubetest: %s SKIPPED: %s\n", t.Name(), cluster.skip)
		t.Skip("no cluster: " + cluster.skip)
	}
}

// kubectl runs the cluster's kubectl with the admin kubeconfig; stdin, when given, is fed to it.
func kubectl(timeout time.Duration, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = repoRoot
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return string(out), nil
}

// mustHelm runs the helm the Makefile pins (built on first use) against the cluster, with the
// admin kubeconfig, and fails the test on an error.
func mustHelm(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	bin, err := helmtest.Binary(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, tail(string(out), 4000))
	}
	return string(out)
}

// mustKubectl is kubectl that fails the test on an error.
func mustKubectl(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, err := kubectl(timeout, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// await calls cond every interval (a kubectl call is a process and an API request: no tighter
// loop than that) until it returns nil, or fails the test with what and cond's last error.
func await(t *testing.T, within, interval time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %v", what, within, err)
		}
		time.Sleep(interval)
	}
}
