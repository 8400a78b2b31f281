package sseclient

import "errors"

// errBadChunk is returned for a malformed chunked body.
var errBadChunk = errors.New("sseclient: malformed chunked body")

// maxChunkSize bounds a chunk size line's value: 16 hex digits would overflow.
const maxChunkDigits = 15

const (
	chunkSize    = iota // reading the hex size
	chunkExt            // skipping a chunk extension up to the end of the line
	chunkData           // passing through the chunk's bytes
	chunkDataEnd        // expecting the CRLF after the data
	chunkTrailer        // after the last chunk
)

// chunkReader undoes HTTP/1.1 chunked transfer coding as a state machine, so a size line or the
// CRLF after a chunk may be split across reads, and passes data through without copying.
type chunkReader struct {
	state  int
	size   int64
	digits int
}

func (c *chunkReader) feed(p []byte, data func([]byte) error) error {
	for len(p) > 0 {
		switch c.state {
		case chunkSize:
			b := p[0]
			p = p[1:]
			switch b {
			case '\r':
			case '\n':
				if c.digits == 0 {
					return errBadChunk
				}
				c.endSizeLine()
			case ';', ' ', '\t':
				c.state = chunkExt
			default:
				v, ok := hexValue(b)
				if !ok || c.digits == maxChunkDigits {
					return errBadChunk
				}
				c.size = c.size<<4 | int64(v)
				c.digits++
			}
		case chunkExt:
			b := p[0]
			p = p[1:]
			if b == '\n' {
				if c.digits == 0 {
					return errBadChunk
				}
				c.endSizeLine()
			}
		case chunkData:
			n := int64(len(p))
			if n > c.size {
				n = c.size
			}
			if err := data(p[:n]); err != nil {
				return err
			}
			p = p[n:]
			c.size -= n
			if c.size == 0 {
				c.state = chunkDataEnd
			}
		case chunkDataEnd:
			b := p[0]
			p = p[1:]
			if b == '\n' {
				c.state, c.size, c.digits = chunkSize, 0, 0
			} else if b != '\r' {
				return errBadChunk
			}
		case chunkTrailer:
			return ErrEnd
		}
	}
	if c.state == chunkTrailer {
		return ErrEnd
	}
	return nil
}

func (c *chunkReader) endSizeLine() {
	if c.size == 0 {
		c.state = chunkTrailer
		return
	}
	c.state = chunkData
}

func hexValue(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	case b >= 'A' && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
