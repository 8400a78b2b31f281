package likes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
)

// maxBody bounds the body of one answer. A like's answer is about 60 bytes: a body near this size
// is not from the writer, and reading it would only cost the generator.
const maxBody = 64 << 10

// answer is the head of one HTTP/1.1 response, as far as the like path needs it.
type answer struct {
	status  int
	length  int64 // Content-Length; -1 when absent
	chunked bool
	close   bool // the writer closes the connection after this response
}

var (
	errLineTooLong  = errors.New("answer line longer than the read buffer")
	errBodyTooLarge = fmt.Errorf("answer body over %d bytes", maxBody)
	errChunkEnd     = errors.New("chunk not followed by CRLF")
)

// readAnswer reads one response from br: the head, then the body into body (a buffer reused from
// answer to answer, returned grown as needed). Interim 1xx responses are skipped. An error means
// the connection is out of step with the writer and must be closed.
func readAnswer(br *bufio.Reader, body []byte) (answer, []byte, error) {
	for {
		a, err := readHead(br)
		if err != nil {
			return a, body, err
		}
		if a.status >= 200 || a.status == 101 {
			body, err = readBody(br, &a, body[:0])
			return a, body, err
		}
	}
}

// readHead reads a status line and the header fields after it.
func readHead(br *bufio.Reader) (answer, error) {
	a := answer{length: -1}
	line, err := readLine(br)
	if err != nil {
		return a, err
	}
	if err := a.statusLine(line); err != nil {
		return a, err
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return a, unexpected(err)
		}
		if len(line) == 0 {
			return a, nil
		}
		if err := a.header(line); err != nil {
			return a, err
		}
	}
}

// readLine returns the next line without its line ending; the slice is valid until the next read.
// io.EOF means the connection ended cleanly before the line began.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, errLineTooLong
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// unexpected turns a clean end of the connection inside a response into an unclean one.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// statusLine parses "HTTP/1.1 200 OK". An HTTP/1.0 answer closes the connection unless its
// Connection header says keep-alive.
func (a *answer) statusLine(line []byte) error {
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return fmt.Errorf("malformed status line %q", clip(line))
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return fmt.Errorf("malformed status line %q", clip(line))
		}
		a.status = a.status*10 + int(c-'0')
	}
	if a.status < 100 {
		return fmt.Errorf("malformed status line %q", clip(line))
	}
	a.close = line[7] == '0' || a.status == 101
	return nil
}

// header notes the fields that frame the body or end the connection; it ignores the others.
func (a *answer) header(line []byte) error {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return fmt.Errorf("malformed header %q", clip(line))
	}
	name, value := line[:colon], trimSpace(line[colon+1:])
	switch {
	case equalFold(name, "Content-Length"):
		n, ok := parseDecimal(value)
		if !ok || (a.length >= 0 && a.length != n) {
			return fmt.Errorf("bad Content-Length %q", clip(value))
		}
		a.length = n
	case equalFold(name, "Transfer-Encoding"):
		// The writer never compresses; any coding but chunked is refused rather than misread.
		if !equalFold(value, "chunked") {
			return fmt.Errorf("unsupported Transfer-Encoding %q", clip(value))
		}
		a.chunked = true
	case equalFold(name, "Connection"):
		for tok := range bytes.SplitSeq(value, []byte(",")) {
			switch tok = trimSpace(tok); {
			case equalFold(tok, "close"):
				a.close = true
			case equalFold(tok, "keep-alive"):
				a.close = false
			}
		}
	}
	return nil
}

// readBody reads the body that a's head announces into body.
func readBody(br *bufio.Reader, a *answer, body []byte) ([]byte, error) {
	switch {
	case a.status < 200 || a.status == 204 || a.status == 304:
		return body, nil
	case a.chunked:
		// Transfer-Encoding overrides Content-Length; a sender of both is not trusted with the
		// connection afterwards (RFC 9112, section 6.3).
		if a.length >= 0 {
			a.close = true
		}
		return readChunked(br, body)
	case a.length >= 0:
		if a.length > maxBody {
			return body, errBodyTooLarge
		}
		body = slices.Grow(body, int(a.length))[:a.length]
		_, err := io.ReadFull(br, body)
		return body, unexpected(err)
	default:
		a.close = true // the body ends where the writer closes the connection
		return readToEOF(br, body)
	}
}

// readChunked reads a chunked body: chunks, the last (empty) chunk, and the trailer section.
func readChunked(br *bufio.Reader, body []byte) ([]byte, error) {
	for {
		line, err := readLine(br)
		if err != nil {
			return body, unexpected(err)
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return body, fmt.Errorf("malformed chunk size %q", clip(line))
		}
		if size == 0 {
			break
		}
		if size > maxBody-len(body) {
			return body, errBodyTooLarge
		}
		n := len(body)
		body = slices.Grow(body, size)[:n+size]
		if _, err := io.ReadFull(br, body[n:]); err != nil {
			return body, unexpected(err)
		}
		if line, err := readLine(br); err != nil || len(line) != 0 {
			return body, errors.Join(unexpected(err), errChunkEnd)
		}
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return body, unexpected(err)
		}
		if len(line) == 0 {
			return body, nil
		}
	}
}

// readToEOF reads a body that has no length: everything until the connection ends.
func readToEOF(br *bufio.Reader, body []byte) ([]byte, error) {
	for {
		if len(body) == cap(body) {
			body = slices.Grow(body, 512)
		}
		n, err := br.Read(body[len(body):min(cap(body), maxBody+1)])
		body = body[:len(body)+n]
		switch {
		case len(body) > maxBody:
			return body, errBodyTooLarge
		case errors.Is(err, io.EOF):
			return body, nil
		case err != nil:
			return body, err
		}
	}
}

// parseChunkSize parses a chunk-size line: hex digits, then optional extensions after ';'.
// Eight digits at most, so the size cannot overflow.
func parseChunkSize(line []byte) (int, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = trimSpace(line)
	if len(line) == 0 || len(line) > 8 {
		return 0, false
	}
	n := 0
	for _, c := range line {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int(c-'0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			n = n<<4 | int(c|0x20-'a'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// parseDecimal parses a non-negative decimal of at most 18 digits (no overflow).
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// equalFold reports whether b equals the ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// clip shortens what an error quotes from the wire.
func clip(b []byte) []byte {
	const most = 64
	if len(b) > most {
		return b[:most]
	}
	return b
}
