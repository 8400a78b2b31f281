package likes

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name      string
		give      string
		wantErr   string // substring; "" = no error
		wantEOF   bool   // the error is io.EOF (the connection ended between answers)
		status    int
		body      string
		wantClose bool
	}{
		{name: "content-length", give: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello",
			status: 200, body: "hello"},
		{name: "header names any case, spaces around values", give: "HTTP/1.1 200 OK\r\ncontent-LENGTH:  5 \r\n\r\nhello",
			status: 200, body: "hello"},
		{name: "bare LF line endings", give: "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", status: 200, body: "hi"},
		{name: "reason phrase absent", give: "HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n", status: 503},
		{name: "chunked with extension and trailer",
			give:   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
			status: 200, body: "hello world"},
		{name: "chunked, hex size in capitals", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n",
			status: 200, body: "0123456789"},
		{name: "chunked overrides content-length and closes",
			give:   "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			status: 200, body: "ok", wantClose: true},
		{name: "connection close", give: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
			status: 200, body: "ok", wantClose: true},
		{name: "connection token list", give: "HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\nContent-Length: 0\r\n\r\n",
			status: 200, wantClose: true},
		{name: "HTTP/1.0 closes", give: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", wantClose: true},
		{name: "HTTP/1.0 keep-alive", give: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
			status: 200, body: "ok"},
		{name: "no length: body until close", give: "HTTP/1.1 200 OK\r\n\r\nuntil the end", status: 200,
			body: "until the end", wantClose: true},
		{name: "interim 100 skipped", give: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			status: 200, body: "ok"},
		{name: "204 has no body", give: "HTTP/1.1 204 No Content\r\n\r\n", status: 204},
		{name: "101 closes", give: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", status: 101, wantClose: true},

		{name: "nothing: clean end between answers", give: "", wantEOF: true},
		{name: "ends in the status line", give: "HTTP/1.1 200", wantErr: "unexpected EOF"},
		{name: "ends in the head", give: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", wantErr: "unexpected EOF"},
		{name: "ends in the body", give: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", wantErr: "unexpected EOF"},
		{name: "ends in a chunk", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe", wantErr: "unexpected EOF"},
		{name: "ends before the last chunk", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", wantErr: "unexpected EOF"},
		{name: "not HTTP", give: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: "malformed status line"},
		{name: "HTTP/2 status line", give: "HTTP/2 200\r\n\r\n", wantErr: "malformed status line"},
		{name: "status not a number", give: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: "malformed status line"},
		{name: "status too long", give: "HTTP/1.1 2000 OK\r\n\r\n", wantErr: "malformed status line"},
		{name: "header without colon", give: "HTTP/1.1 200 OK\r\nbogus\r\n\r\n", wantErr: "malformed header"},
		{name: "bad content-length", give: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: "bad Content-Length"},
		{name: "conflicting content-lengths", give: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
			wantErr: "bad Content-Length"},
		{name: "gzip refused", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", wantErr: "unsupported Transfer-Encoding"},
		{name: "bad chunk size", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantErr: "malformed chunk size"},
		{name: "chunk size overflow", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n123456789\r\n", wantErr: "malformed chunk size"},
		{name: "chunk longer than its size", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay\r\n0\r\n\r\n",
			wantErr: "chunk not followed by CRLF"},
		{name: "body too large", give: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", wantErr: "answer body over"},
		{name: "body until close too large", give: "HTTP/1.1 200 OK\r\n\r\n" + strings.Repeat("a", maxBody+1),
			wantErr: "answer body over"},
		{name: "chunks too large", give: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFF\r\n", wantErr: "answer body over"},
		{name: "header line too long", give: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", readBuffer) + "\r\n\r\n",
			wantErr: "longer than the read buffer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.give), readBuffer)
			a, body, err := readAnswer(br, nil)
			switch {
			case tt.wantEOF:
				if !errors.Is(err, io.EOF) {
					t.Fatalf("got error %v; want io.EOF", err)
				}
				return
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v; want one containing %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("got error %v; want none", err)
			}
			if a.status != tt.status || string(body) != tt.body || a.close != tt.wantClose {
				t.Fatalf("got status %d, body %q, close %v; want %d, %q, %v", a.status, body, a.close, tt.status, tt.body, tt.wantClose)
			}
		})
	}
}

// TestReadAnswerPipelined: answers that follow each other on one connection are read one by one,
// each body exactly its own, with the body buffer reused.
func TestReadAnswerPipelined(t *testing.T) {
	wire := "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n" +
		"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nthree"
	br := bufio.NewReader(strings.NewReader(wire))
	var body []byte
	for _, want := range []string{"one", "two", "three"} {
		var err error
		if _, body, err = readAnswer(br, body); err != nil || string(body) != want {
			t.Fatalf("got %q, %v; want %q", body, err, want)
		}
	}
	if _, _, err := readAnswer(br, body); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last answer got %v; want io.EOF", err)
	}
}

func TestScanLike(t *testing.T) {
	tests := []struct {
		give      string
		wantCount int64
		wantLiked bool
		wantErr   error
	}{
		{give: `{"post_id":"42","count":123,"liked":true}` + "\n", wantCount: 123, wantLiked: true},
		{give: `{"post_id":"42","count":7,"liked":false}`, wantCount: 7},
		{give: `{ "liked" : true , "count" : 9 }`, wantCount: 9, wantLiked: true},
		{give: `{"post_id":"count","count":5,"liked":true}`, wantCount: 5, wantLiked: true},
		{give: `{"post_id":"a","count":-3,"liked":true}`, wantCount: -3, wantLiked: true},
		{give: `{"post_id":"a","liked":true}`, wantErr: errNoCount},
		{give: `{"post_id":"a","count":"12","liked":true}`, wantErr: errNoCount},
		{give: `{"post_id":"a","count":1234567890123456789,"liked":true}`, wantErr: errNoCount},
		{give: `{"post_id":"a","count":1}`, wantErr: errNoLiked},
		{give: `{"post_id":"a","count":1,"liked":"yes"}`, wantErr: errNoLiked},
		{give: `{"error":"redis unavailable"}`, wantErr: errNoCount},
		{give: ``, wantErr: errNoCount},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			count, liked, err := scanLike([]byte(tt.give))
			if !errors.Is(err, tt.wantErr) || count != tt.wantCount || liked != tt.wantLiked {
				t.Fatalf("got %d, %v, %v; want %d, %v, %v", count, liked, err, tt.wantCount, tt.wantLiked, tt.wantErr)
			}
		})
	}
}

// FuzzReadAnswer feeds arbitrary bytes as the writer's answers: the parser must never panic, never
// accept a body over maxBody, and never claim more bytes than it was given.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n{\"post_id\":\"42\",\"count\":123,\"liked\":true}"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n0\r\nT: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 503 x\r\nConnection: keep-alive\r\n\r\nbody"))
	f.Fuzz(func(t *testing.T, wire []byte) {
		br := bufio.NewReaderSize(strings.NewReader(string(wire)), readBuffer)
		var body []byte
		for range 4 {
			var err error
			_, body, err = readAnswer(br, body)
			if err != nil {
				return
			}
			if len(body) > maxBody || len(body) > len(wire) {
				t.Fatalf("body of %d bytes from %d bytes of input", len(body), len(wire))
			}
			_, _, _ = scanLike(body)
		}
	})
}
