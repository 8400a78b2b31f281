package contract

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// conforms holds a reply to its operation's document as every test of likes does: with
// testkit/apicheck, which finds the request's operation in the document and validates the reply
// with kin-openapi (the status is documented, its content type is one the status lists, headers
// and body match their schemas; a stream's head only). apicheck's Transport reports to the test
// that started a service; a rapid draw must fail on its own T, so this calls the same check
// directly. apicheck's router matches the decoded path, where an escaped slash in a path value
// (a%2Fb) makes more segments than the template has, though the services' router (chi, on the
// raw path) serves the operation: such a draw is validated against the operation it chose.
func conforms(c *call, r reply) error {
	for _, v := range c.path {
		if strings.Contains(v, "/") {
			return conformsAt(c, r)
		}
	}
	var body []byte
	if !r.streamed {
		body = r.body
	}
	return c.op.spec.Check(r.req, r.resp, body)
}

// conformsAt validates r against the drawn operation with kin-openapi's ValidateResponse.
func conformsAt(c *call, r reply) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r.req,
			PathParams: c.path,
			Route: &routers.Route{Spec: c.op.spec.Doc, Path: c.op.path, PathItem: c.op.item,
				Method: c.op.method, Operation: c.op.op},
		},
		Status:  r.status,
		Header:  r.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: r.streamed, MultiError: true},
	}
	in.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if ref := c.op.op.Responses.Status(r.status); ref != nil && ref.Value != nil && len(ref.Value.Content) > 0 &&
		ref.Value.Content.Get(r.header.Get("Content-Type")) == nil {
		return errors.New("content type " + r.header.Get("Content-Type") + " is not documented for " + http.StatusText(r.status))
	}
	return nil
}
