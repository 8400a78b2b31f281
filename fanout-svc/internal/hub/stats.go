package hub

import "sync/atomic"

// Stats are the hub's counters, read by the metrics endpoint. Loops add to them once per loop
// iteration, not once per viewer, so counting costs nothing on the hot path.
type Stats struct {
	Viewers      atomic.Int64 // connected viewers
	Updates      atomic.Int64 // updates accepted by Publish
	Stale        atomic.Int64 // updates dropped as older than what the hub had
	FramesSent   atomic.Int64 // frames handed to sockets in full
	Conflated    atomic.Int64 // frames a viewer skipped because a newer one replaced them
	DisplayHeld  atomic.Int64 // the part of Conflated the display rate made (display.go, pace.go)
	Writes       atomic.Int64 // write(2) calls
	WriteErrors  atomic.Int64 // viewers dropped on a write error
	Disconnects  atomic.Int64 // viewers gone (EOF, error, stall, drain)
	Stalled      atomic.Int64 // viewers dropped because their socket did not drain in time
	Heartbeats   atomic.Int64 // pings sent
	BytesWritten atomic.Int64
	// Watching numbers (watching.go): changed numbers accepted, frames handed to sockets.
	WatchingUpdates atomic.Int64
	WatchingSent    atomic.Int64
	Delivery        Delivery // Redis to this node's viewers, per post per write pass
	// Panics recovered while a loop served one viewer (recover.go); that viewer was closed.
	Panics atomic.Int64
}

// counts is a loop's local tally, flushed into Stats once per loop iteration.
type counts struct {
	framesSent, conflated, writes, writeErrors, disconnects, stalled, heartbeats, bytes int64
	watchingSent, displayHeld                                                           int64
	delivery                                                                            deliveryTally
}

func (c *counts) flushTo(s *Stats) {
	if *c == (counts{}) {
		return
	}
	s.FramesSent.Add(c.framesSent)
	s.Conflated.Add(c.conflated)
	s.Writes.Add(c.writes)
	s.WriteErrors.Add(c.writeErrors)
	s.Disconnects.Add(c.disconnects)
	s.Stalled.Add(c.stalled)
	s.Heartbeats.Add(c.heartbeats)
	s.BytesWritten.Add(c.bytes)
	s.WatchingSent.Add(c.watchingSent)
	s.DisplayHeld.Add(c.displayHeld)
	if c.delivery != (deliveryTally{}) {
		c.delivery.flushTo(&s.Delivery)
	}
	*c = counts{}
}
