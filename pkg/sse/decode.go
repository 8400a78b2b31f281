package sse

import (
	"bytes"
	"errors"
	"strconv"
)

// MaxLine bounds one line of input; a longer line is an error rather than a growing buffer.
const MaxLine = 64 << 10

// ErrLineTooLong is returned by Feed when a line exceeds MaxLine.
var ErrLineTooLong = errors.New("sse: line too long")

// Event is one dispatched event. Its slices are valid only during the callback that receives it.
type Event struct {
	ID    []byte
	HasID bool
	Event []byte
	Data  []byte
	Retry int64 // milliseconds; -1 when the event carried none
}

// Decoder parses an event stream fed in arbitrary pieces (frames may be split anywhere). It keeps
// its buffers between calls, so a steady stream is decoded without allocating. The zero value is
// ready to use. A load generator keeps one per viewer: the bools sit together, with no padding
// between.
type Decoder struct {
	line     []byte
	cur      Event
	retry    int64 // -1 until a retry field is seen in the current event
	Comments int   // comment lines seen (heartbeats)
	hasData  bool
	started  bool
}

// Feed parses p and calls emit for each complete event.
func (d *Decoder) Feed(p []byte, emit func(*Event)) error {
	if !d.started {
		d.reset()
		d.started = true
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(d.line)+len(p) > MaxLine {
				return ErrLineTooLong
			}
			d.line = append(d.line, p...)
			return nil
		}
		var line []byte
		if len(d.line) > 0 {
			if len(d.line)+i > MaxLine {
				return ErrLineTooLong
			}
			d.line = append(d.line, p[:i]...)
			line = d.line
		} else {
			line = p[:i]
		}
		p = p[i+1:]
		line = bytes.TrimSuffix(line, []byte{'\r'})
		d.handleLine(line, emit)
		d.line = d.line[:0]
	}
	return nil
}

func (d *Decoder) handleLine(line []byte, emit func(*Event)) {
	if len(line) == 0 {
		d.dispatch(emit)
		return
	}
	if line[0] == ':' {
		d.Comments++
		return
	}
	field, value, _ := bytes.Cut(line, []byte{':'})
	value = bytes.TrimPrefix(value, []byte{' '})
	switch string(field) {
	case "id":
		d.cur.ID = append(d.cur.ID[:0], value...)
		d.cur.HasID = true
	case "event":
		d.cur.Event = append(d.cur.Event[:0], value...)
	case "data":
		if d.hasData {
			d.cur.Data = append(d.cur.Data, '\n')
		}
		d.cur.Data = append(d.cur.Data, value...)
		d.hasData = true
	case "retry":
		if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 {
			d.retry = n
		}
	}
}

func (d *Decoder) dispatch(emit func(*Event)) {
	if d.hasData || d.retry >= 0 || d.cur.HasID {
		d.cur.Retry = d.retry
		emit(&d.cur)
	}
	d.reset()
}

func (d *Decoder) reset() {
	d.cur.ID = d.cur.ID[:0]
	d.cur.HasID = false
	d.cur.Event = d.cur.Event[:0]
	d.cur.Data = d.cur.Data[:0]
	d.retry = -1
	d.hasData = false
}
