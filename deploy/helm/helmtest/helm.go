// Package helmtest runs the helm the Makefile pins (HELM_VERSION, built from its module into
// .tools) against the chart in deploy/helm/likes: its own tests lint and render the chart, and
// deploy/kubetest installs it on a real cluster with the same binary.
package helmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// buildTimeout bounds building helm from its module on a cold machine (a few minutes on 2 cores).
const buildTimeout = 30 * time.Minute

// Chart is the chart's directory in the repository at root.
func Chart(root string) string { return filepath.Join(root, "deploy", "helm", "likes") }

var helmVersion = regexp.MustCompile(`(?m)^HELM_VERSION\s*:=\s*(\S+)\s*$`)

// Binary returns the helm of the repository at root: $HELM when set, else the Makefile's
// .tools/helm-<HELM_VERSION>, which make builds when it is missing (a no-op when it is there).
func Binary(root string) (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		return h, nil
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := helmVersion.FindSubmatch(mk)
	if m == nil {
		return "", fmt.Errorf("no HELM_VERSION in %s/Makefile", root)
	}
	target := filepath.Join(".tools", "helm-"+string(m[1]))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", target)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make %s: %w\n%s", target, err, out)
	}
	return filepath.Join(root, target), nil
}
