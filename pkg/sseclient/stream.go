package sseclient

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/likes/likes/pkg/sse"
)

// maxHead bounds the response head; a longer one is an error, not a growing buffer.
const maxHead = 16 << 10

// ErrHeadTooLong is returned when the response head exceeds maxHead bytes.
var ErrHeadTooLong = errors.New("sseclient: response head too long")

// ErrEnd is returned when a chunked body ends (the last chunk): the server closed the stream.
var ErrEnd = errors.New("sseclient: end of chunked body")

// StatusError is returned by Feed when the response status is not 200. RetryAfter is the
// response's Retry-After in seconds, 0 when it has none (a full node answers 503 with one).
type StatusError struct {
	Code       int
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return fmt.Sprintf("sseclient: status %d", e.Code) }

// Stream decodes one response. The zero value is ready for a new response. A load generator
// keeps one per viewer, hundreds of thousands: the bools sit together, with no padding between.
type Stream struct {
	head     []byte
	status   int
	retry    time.Duration // Retry-After
	chunk    chunkReader
	dec      sse.Decoder
	headDone bool
	chunked  bool
}

// Open reports whether the head was read with status 200, so events may follow.
func (s *Stream) Open() bool { return s.headDone && s.status == 200 }

// Comments returns how many comment lines (heartbeats) the stream carried.
func (s *Stream) Comments() int { return s.dec.Comments }

// Feed consumes p and calls emit for every complete event in it. It returns a *StatusError as soon
// as a head with a status other than 200 is read, and ErrEnd when a chunked body ends.
func (s *Stream) Feed(p []byte, emit func(*sse.Event)) error {
	if !s.headDone {
		rest, err := s.readHead(p)
		if err != nil || !s.headDone {
			return err
		}
		p = rest
	}
	if len(p) == 0 {
		return nil
	}
	if s.chunked {
		return s.chunk.feed(p, func(b []byte) error { return s.dec.Feed(b, emit) })
	}
	return s.dec.Feed(p, emit)
}

// readHead accumulates the head and, once it is complete, parses it and returns the body bytes
// that followed it in p.
func (s *Stream) readHead(p []byte) ([]byte, error) {
	start := max(len(s.head)-3, 0) // the terminator may straddle two pieces
	s.head = append(s.head, p...)
	i := bytes.Index(s.head[start:], []byte("\r\n\r\n"))
	if i < 0 {
		if len(s.head) > maxHead {
			return nil, ErrHeadTooLong
		}
		return nil, nil
	}
	end := start + i + 4
	body := p[len(p)-(len(s.head)-end):]
	if err := s.parseHead(s.head[:end]); err != nil {
		return nil, err
	}
	s.head = nil
	s.headDone = true
	if s.status != 200 {
		return nil, &StatusError{Code: s.status, RetryAfter: s.retry}
	}
	return body, nil
}

func (s *Stream) parseHead(head []byte) error {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	// "HTTP/1.1 200 OK"
	_, after, ok := bytes.Cut(line, []byte(" "))
	if !ok || !bytes.HasPrefix(line, []byte("HTTP/1.")) || len(after) < 3 {
		return fmt.Errorf("sseclient: bad status line %q", line)
	}
	code, err := strconv.Atoi(string(after[:3]))
	if err != nil {
		return fmt.Errorf("sseclient: bad status line %q", line)
	}
	s.status = code
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name = bytes.TrimSpace(name)
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			s.chunked = s.chunked || bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Retry-After")):
			if sec, err := strconv.Atoi(string(bytes.TrimSpace(value))); err == nil && sec > 0 {
				s.retry = time.Duration(sec) * time.Second
			}
		}
	}
	return nil
}
