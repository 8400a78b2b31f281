package ramp

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"time"

	"github.com/likes/likes/loadgen/internal/report"
	"github.com/likes/likes/loadgen/internal/worker"
)

// stormRun is a node's loss under way: the kill command, run once at its time by one goroutine
// that the phase waits for.
type stormRun struct {
	done chan struct{}
	err  error
	out  []byte
}

// startStorm runs cfg.Storm's command at at (the window's start plus its After) unless ctx ends
// first; the first phase that calls it runs it, later phases get nil.
func (r *Ramp) startStorm(ctx context.Context, at time.Time) *stormRun {
	if r.cfg.Storm == nil || r.stormed {
		return nil
	}
	r.stormed = true
	s := &stormRun{done: make(chan struct{})}
	go func() { // exits when the command has run, or ctx ended before its time
		defer close(s.done)
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		}
		r.progress.line("loadgen: node loss: running %q", r.cfg.Storm.Command)
		s.out, s.err = exec.CommandContext(ctx, "sh", "-c", r.cfg.Storm.Command).CombinedOutput()
	}()
	return s
}

// wait returns the command's error, with its output.
func (s *stormRun) wait() error {
	<-s.done
	if s.err != nil {
		return fmt.Errorf("--kill-cmd: %w: %s", s.err, s.out)
	}
	return nil
}

// fillStorm reports the storm from the workers' counters before (st) and after (end) the phase.
func (r *Ramp) fillStorm(ph *report.Phase, st, end worker.Status) {
	s := &report.Storm{
		Command: r.cfg.Storm.Command, AfterMs: r.cfg.Storm.After.Milliseconds(),
		Moved: end.Moved - st.Moved, Admitted: end.MovedOpen - st.MovedOpen,
		Refused: end.Refused - st.Refused, Failed: end.Failed - st.Failed,
		CurrentMs: report.Float(math.NaN()),
	}
	if end.MovedFirstUS > 0 && end.MovedCurrentUS >= end.MovedFirstUS {
		s.CurrentMs = report.Float(float64(end.MovedCurrentUS-end.MovedFirstUS) / 1000)
	}
	ph.Storm = s
	ph.Notes = append(ph.Notes, fmt.Sprintf("node loss %v into the window: %d viewers moved, %d admitted by the other nodes (%d refused, %d failed); every admitted one current %.0f ms after the first stream ended",
		r.cfg.Storm.After, s.Moved, s.Admitted, s.Refused, s.Failed, float64(s.CurrentMs)))
	switch {
	case s.Moved == 0:
		ph.Broke = append(ph.Broke, "node loss: no viewer's stream ended (did --kill-cmd kill a node?)")
	case s.Admitted < s.Moved:
		ph.Broke = append(ph.Broke, fmt.Sprintf("node loss: %d of %d moved viewers not admitted", s.Moved-s.Admitted, s.Moved))
	}
}
