package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dockerfile is build/Dockerfile split into stages.
type dockerfile struct {
	args   map[string]string // global ARG defaults (before the first FROM)
	stages []*stage
}

// stage is one FROM ... AS name section and its instructions, continuation lines joined.
type stage struct {
	name, base string
	lines      []string // "INSTRUCTION rest", instruction upper-cased
}

func (d *dockerfile) stage(name string) *stage {
	for _, s := range d.stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (s *stage) has(prefix string) bool {
	for _, l := range s.lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// readDockerfile parses the instructions of a Dockerfile: enough to check pins and stages, no
// more (no variable expansion beyond global ARG defaults in FROM).
func readDockerfile(t *testing.T, path string) *dockerfile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	d := &dockerfile{args: map[string]string{}}
	var cur *stage
	var pending string
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		instr := pending + trimmed
		pending = ""
		word, rest, _ := strings.Cut(instr, " ")
		word = strings.ToUpper(word)
		rest = strings.TrimSpace(rest)
		switch {
		case word == "FROM":
			fields := strings.Fields(rest)
			cur = &stage{base: expandArgs(fields[0], d.args)}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				cur.name = fields[2]
			}
			d.stages = append(d.stages, cur)
		case cur == nil && word == "ARG":
			k, v, _ := strings.Cut(rest, "=")
			d.args[k] = v
		case cur != nil:
			cur.lines = append(cur.lines, word+" "+rest)
		}
	}
	return d
}

// expandArgs replaces ${NAME} by the global ARG defaults until none is left (an ARG's default
// may name another ARG, as GO_IMAGE=golang:${GO_VERSION} does).
func expandArgs(s string, args map[string]string) string {
	for range 8 {
		before := s
		for k, v := range args {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		if s == before {
			break
		}
	}
	return s
}

func TestDockerfileGoVersionMatchesGoMod(t *testing.T) {
	d := readDockerfile(t, filepath.Join(repoRoot, "build", "Dockerfile"))
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	build := d.stage("build")
	if build == nil {
		t.Fatal("Dockerfile has no stage named build")
	}
	if want := "golang:" + string(m[1]); build.base != want {
		t.Errorf("build stage FROM %s; want %s (go.mod's go line)", build.base, want)
	}
}

func TestDockerfileImagesArePinned(t *testing.T) {
	d := readDockerfile(t, filepath.Join(repoRoot, "build", "Dockerfile"))
	names := map[string]bool{}
	for _, s := range d.stages {
		if names[s.base] { // FROM an earlier stage
			continue
		}
		names[s.name] = true
		if !imagePinned(s.base) {
			t.Errorf("FROM %s: want a pinned tag (a version, never latest or none)", s.base)
		}
	}
}

// imagePinned reports whether an image reference names a fixed version: a digest, or a tag that
// contains a version number (distroless encodes the Debian release in the repository name).
func imagePinned(ref string) bool {
	if strings.Contains(ref, "@sha256:") {
		return true
	}
	slash := strings.LastIndex(ref, "/")
	repo, tag, ok := strings.Cut(ref[slash+1:], ":")
	if !ok || tag == "latest" || strings.Contains(ref, "$") {
		return false
	}
	return regexp.MustCompile(`\d`).MatchString(tag) || regexp.MustCompile(`debian\d+$`).MatchString(repo)
}

func TestDockerfileRuntimeIsStaticNonRoot(t *testing.T) {
	d := readDockerfile(t, filepath.Join(repoRoot, "build", "Dockerfile"))
	build := d.stage("build")
	if build == nil || !build.has("ENV CGO_ENABLED=0") {
		t.Errorf("build stage lacks ENV CGO_ENABLED=0; the runtime image has no libc")
	}
	tool := d.stage("tool")
	if tool == nil {
		t.Fatal("Dockerfile has no stage named tool")
	}
	if !strings.HasPrefix(tool.base, "gcr.io/distroless/static") || !strings.HasSuffix(tool.base, ":nonroot") {
		t.Errorf("tool stage FROM %s; want distroless static, nonroot variant", tool.base)
	}
	if !tool.has("USER nonroot") {
		t.Errorf("tool stage does not say USER nonroot")
	}
	server := d.stage("server")
	if server == nil || server.base != "tool" {
		t.Fatalf("want a server stage FROM tool")
	}
	if !server.has(`HEALTHCHECK `) || !server.has("COPY --from=build /out/healthcheck /healthcheck") {
		t.Errorf("server stage lacks the /healthcheck helper and its HEALTHCHECK")
	}
	if d.stages[len(d.stages)-1] != server {
		t.Errorf("last stage is %q; want server, the default target of a plain docker build", d.stages[len(d.stages)-1].name)
	}
}

// TestProgramsBuildStatic builds what the image builds, with the Dockerfile's settings, and checks
// each binary is static.
func TestProgramsBuildStatic(t *testing.T) {
	for _, name := range []string{"writer-svc", "fanout-svc", "loadgen", "build/healthcheck"} {
		t.Run(name, func(t *testing.T) {
			assertStatic(t, buildProgram(t, name))
		})
	}
}

// TestDockerignoreKeepsSources guards the build context: excluding a source directory would break
// the image build, which no test here can run.
func TestDockerignoreKeepsSources(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "build", "Dockerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum", "pkg", "writer-svc", "fanout-svc", "loadgen", "build", "build/healthcheck"}
	for _, line := range strings.Split(string(raw), "\n") {
		pattern := strings.TrimSpace(line)
		if pattern == "" || strings.HasPrefix(pattern, "#") {
			continue
		}
		for _, path := range needed {
			if ok, _ := filepath.Match(pattern, path); ok {
				t.Errorf("dockerignore pattern %q excludes %s, which the image build needs", pattern, path)
			}
		}
	}
}
