// Package envflag defines command-line flags whose defaults come from environment variables, so
// that every service can be configured by flags (scripts, tests) or by environment (Compose,
// Kubernetes) with one definition, and `--help` names both.
package envflag

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Set is a flag.FlagSet that reads defaults from an environment lookup function.
type Set struct {
	FS     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

// New returns a Set for program name, writing usage and errors to out.
func New(name string, getenv func(string) string, out io.Writer) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return &Set{FS: fs, getenv: getenv}
}

func (s *Set) env(env string) (string, bool) {
	if env == "" || s.getenv == nil {
		return "", false
	}
	v := s.getenv(env)
	return v, v != ""
}

func usage(text, env string) string {
	if env == "" {
		return text
	}
	return text + " (env " + env + ")"
}

func (s *Set) bad(env, v string, err error) {
	s.errs = append(s.errs, fmt.Errorf("environment %s=%q: %w", env, v, err))
}

// String defines a string flag.
func (s *Set) String(p *string, name, env, def, text string) {
	if v, ok := s.env(env); ok {
		def = v
	}
	s.FS.StringVar(p, name, def, usage(text, env))
}

// Int defines an int flag.
func (s *Set) Int(p *int, name, env string, def int, text string) {
	if v, ok := s.env(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.bad(env, v, err)
		} else {
			def = n
		}
	}
	s.FS.IntVar(p, name, def, usage(text, env))
}

// Float defines a float64 flag.
func (s *Set) Float(p *float64, name, env string, def float64, text string) {
	if v, ok := s.env(env); ok {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.bad(env, v, err)
		} else {
			def = n
		}
	}
	s.FS.Float64Var(p, name, def, usage(text, env))
}

// Bool defines a bool flag.
func (s *Set) Bool(p *bool, name, env string, def bool, text string) {
	if v, ok := s.env(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.bad(env, v, err)
		} else {
			def = b
		}
	}
	s.FS.BoolVar(p, name, def, usage(text, env))
}

// Duration defines a time.Duration flag.
func (s *Set) Duration(p *time.Duration, name, env string, def time.Duration, text string) {
	if v, ok := s.env(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			s.bad(env, v, err)
		} else {
			def = d
		}
	}
	s.FS.DurationVar(p, name, def, usage(text, env))
}

// List defines a comma-separated list flag.
func (s *Set) List(p *[]string, name, env, def, text string) {
	if v, ok := s.env(env); ok {
		def = v
	}
	*p = SplitList(def)
	s.FS.Func(name, usage(text, env)+fmt.Sprintf(" (default %q)", def), func(v string) error {
		*p = SplitList(v)
		return nil
	})
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Parse parses args (without the program name) and reports malformed environment values first.
func (s *Set) Parse(args []string) error {
	if len(s.errs) > 0 {
		return s.errs[0]
	}
	if err := s.FS.Parse(args); err != nil {
		return err
	}
	if s.FS.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", s.FS.Args())
	}
	return nil
}
