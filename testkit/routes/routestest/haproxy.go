package routestest

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// HAProxy is an haproxy configuration split into sections ("frontend likes", "backend x", ...),
// each a list of keyword lines with comments removed.
type HAProxy map[string][][]string

// ReadHAProxy reads and parses the haproxy configuration at path.
func ReadHAProxy(t testing.TB, path string) HAProxy {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read haproxy config: %v", err)
	}
	return ParseHAProxy(string(raw))
}

// ParseHAProxy parses an haproxy configuration: section headers start in column 0, their keyword
// lines are indented.
func ParseHAProxy(raw string) HAProxy {
	cfg := HAProxy{}
	var section string
	for _, line := range strings.Split(raw, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			section = strings.Join(fields, " ")
			cfg[section] = nil
			continue
		}
		cfg[section] = append(cfg[section], fields)
	}
	return cfg
}

// Sections returns the names of the sections of one kind ("frontend", "backend").
func (c HAProxy) Sections(kind string) []string {
	var names []string
	for s := range c {
		if name, ok := strings.CutPrefix(s, kind+" "); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Lines returns the lines of a section whose keywords start with words.
func (c HAProxy) Lines(section string, words ...string) [][]string {
	var out [][]string
	for _, l := range c[section] {
		if len(l) >= len(words) && slices.Equal(l[:len(words)], words) {
			out = append(out, l)
		}
	}
	return out
}

// Value returns the argument after words in a section, "" when absent. An environment reference
// with a default, "${NAME-default}", gives the default: what haproxy uses when NAME is unset.
func (c HAProxy) Value(section string, words ...string) string {
	v := c.Raw(section, words...)
	if _, def, ok := EnvRef(v); ok {
		return def
	}
	return v
}

// Raw returns the argument after words in a section as written, "" when absent.
func (c HAProxy) Raw(section string, words ...string) string {
	l := c.Lines(section, words...)
	if len(l) == 0 || len(l[0]) <= len(words) {
		return ""
	}
	return l[0][len(words)]
}

var envRefPattern = regexp.MustCompile(`^"\$\{([A-Z][A-Z0-9_]*)-([^}"]*)\}"$`)

// EnvRef splits an haproxy argument of the form "${NAME-default}".
func EnvRef(v string) (name, def string, ok bool) {
	m := envRefPattern.FindStringSubmatch(v)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Frontends returns the frontends that bind port, sorted by name.
func (c HAProxy) Frontends(port string) []string {
	var out []string
	for _, f := range c.Sections("frontend") {
		for _, l := range c.Lines("frontend "+f, "bind") {
			if _, p, err := net.SplitHostPort(l[1]); err == nil && p == port {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// Servers returns the addresses ("host:port") of a backend's server and server-template lines.
func (c HAProxy) Servers(backend string) []string {
	var out []string
	for _, l := range c["backend "+backend] {
		switch {
		case l[0] == "server" && len(l) > 2:
			out = append(out, l[2])
		case l[0] == "server-template" && len(l) > 3:
			out = append(out, l[3])
		}
	}
	return out
}

// HAProxyBinary returns the haproxy on PATH, and fails the test with how to install it when there
// is none.
func HAProxyBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy not found on PATH: install it (apt-get install -y haproxy) and rerun")
	}
	return bin
}
