package envflag

import (
	"io"
	"reflect"
	"testing"
	"time"
)

func TestEnvDefaultsAndFlagsOverride(t *testing.T) {
	env := map[string]string{"LISTEN_ADDR": ":9000", "MAX": "7", "WAIT": "2s", "ON": "true", "L": "a, b,,c"}
	s := New("x", func(k string) string { return env[k] }, io.Discard)
	var listen string
	var max int
	var wait time.Duration
	var on bool
	var list []string
	s.String(&listen, "listen", "LISTEN_ADDR", ":8080", "address")
	s.Int(&max, "max", "MAX", 1, "max")
	s.Duration(&wait, "wait", "WAIT", time.Second, "wait")
	s.Bool(&on, "on", "ON", false, "on")
	s.List(&list, "list", "L", "", "list")
	if err := s.Parse([]string{"--max", "9"}); err != nil {
		t.Fatal(err)
	}
	if listen != ":9000" || max != 9 || wait != 2*time.Second || !on || !reflect.DeepEqual(list, []string{"a", "b", "c"}) {
		t.Errorf("got %q %d %v %v %v", listen, max, wait, on, list)
	}
}

func TestBadEnvironmentIsAnError(t *testing.T) {
	s := New("x", func(string) string { return "soon" }, io.Discard)
	var d time.Duration
	s.Duration(&d, "wait", "WAIT", time.Second, "wait")
	if err := s.Parse(nil); err == nil {
		t.Error("Parse succeeded with WAIT=soon; want error")
	}
}
