package apicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// eventStream is the media type of a stream: its body never ends, so only its head is checked.
const eventStream = "text/event-stream"

// Check validates the reply resp (whose body, if read, is body) to req against s. It returns
// nil when the request names an operation of s and the reply is one the operation documents.
// Both documents say what a request outside them gets, and Check holds the reply to that: a path
// the document does not list, a 404 with the JSON error body; a listed path with a method it does
// not list, a 405 with it. Any other reply to such a request is an error: the service routes
// something its document lacks. body is nil for a stream, whose head alone is checked.
func (s *Spec) Check(req *http.Request, resp *http.Response, body []byte) error {
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		if s.listsPath(req) {
			return unlisted(req, resp, body, http.StatusMethodNotAllowed, fmt.Sprintf("%s lists %s, not its method %s", s.Name, req.URL.Path, req.Method))
		}
		return unlisted(req, resp, body, http.StatusNotFound, fmt.Sprintf("%s does not list %s", s.Name, req.URL.Path))
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if body == nil {
		in.Options.ExcludeResponseBody = true
		if err := documentedType(route, resp); err != nil {
			return err
		}
	} else {
		in.SetBodyBytes(body)
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// listsPath reports whether the document lists req's path under any method.
func (s *Spec) listsPath(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodOptions} {
		r := req.Clone(req.Context())
		r.Method = m
		if _, _, err := s.router.FindRoute(r); err == nil {
			return true
		}
	}
	return false
}

// unlisted checks the reply to a request outside the document: want, with the JSON error body
// (pkg/serve.NotFound, MethodNotAllowed; a HEAD's reply has no body to check).
func unlisted(req *http.Request, resp *http.Response, body []byte, want int, what string) error {
	if resp.StatusCode != want {
		return fmt.Errorf("%s, and the reply is %d, not %d: the service routes what its document lacks", what, resp.StatusCode, want)
	}
	if req.Method == http.MethodHead {
		return nil
	}
	if err := errorBody(resp, body); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// documentedType checks a stream's content type against what its status documents, which
// ValidateResponse does only when it reads the body.
func documentedType(route *routers.Route, resp *http.Response) error {
	ref := route.Operation.Responses.Status(resp.StatusCode)
	if ref == nil || ref.Value == nil || len(ref.Value.Content) == 0 {
		return nil // ValidateResponse reports an undocumented status
	}
	if ct := resp.Header.Get("Content-Type"); ref.Value.Content.Get(ct) == nil {
		return fmt.Errorf("status %d: content type %q is not documented", resp.StatusCode, ct)
	}
	return nil
}

// errorBody checks a JSON error reply: {"error": "..."} and nothing the error schema lacks.
func errorBody(resp *http.Response, body []byte) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" {
		return fmt.Errorf("error reply is %q; want application/json", resp.Header.Get("Content-Type"))
	}
	var e struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		return fmt.Errorf("error reply %q is not {\"error\": \"...\"}", prefix(body))
	}
	return nil
}

// streams reports whether the reply resp to req is a stream, whose body must not be read: its
// content type says so, or the document says the operation streams with this status (a stream
// mislabelled would never end).
func (s *Spec) streams(req *http.Request, resp *http.Response) bool {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == eventStream {
		return true
	}
	route, _, err := s.router.FindRoute(req)
	if err != nil {
		return false
	}
	ref := route.Operation.Responses.Status(resp.StatusCode)
	return ref != nil && ref.Value != nil && ref.Value.Content.Get(eventStream) != nil
}

// readBody reads resp's body for validation and puts back a reader of the same bytes (and of the
// read's error, if it failed), so the caller reads what it would have.
func readBody(resp *http.Response) []byte {
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var rest io.Reader = bytes.NewReader(b)
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
	}
	resp.Body = io.NopCloser(rest)
	return b
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// prefix is the start of a body, for a report.
func prefix(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
