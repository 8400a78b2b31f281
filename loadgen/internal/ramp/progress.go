package ramp

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress writes the live progress line. On a terminal it rewrites one line in place; to a file
// or pipe it writes a line every few seconds, so logs stay readable.
type progress struct {
	out      io.Writer
	terminal bool
	last     time.Time
	shown    bool
}

func newProgress(out io.Writer) *progress {
	p := &progress{out: out}
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// update shows line (printf style).
func (p *progress) update(format string, args ...any) {
	if p.terminal {
		fmt.Fprintf(p.out, "\r\033[K"+format, args...)
		p.shown = true
		return
	}
	if time.Since(p.last) < 5*time.Second {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.out, format+"\n", args...)
}

// line ends the live line and prints a permanent one.
func (p *progress) line(format string, args ...any) {
	if p.terminal && p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
	fmt.Fprintf(p.out, format+"\n", args...)
}
