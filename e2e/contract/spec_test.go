package contract

import (
	"mime"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/likes/likes/testkit/apicheck"
)

// operation is one method on one path of a document, with everything a draw needs.
type operation struct {
	target string         // the service that serves it: "writer" or "fanout"
	spec   *apicheck.Spec // its document (pkg/openapi), loaded and validated by apicheck
	method string         // GET, POST, ...
	path   string         // the template: /like/{postID}
	item   *openapi3.PathItem
	op     *openapi3.Operation
	params []*openapi3.Parameter // the path item's and the operation's, the operation's winning
	stream bool                  // a success is text/event-stream: read its head only
}

func (o *operation) String() string { return o.target + " " + o.method + " " + o.path }

// GoString is how rapid logs a drawn operation.
func (o *operation) GoString() string { return o.String() }

// schemeOf is the security scheme of the documents that each drawn identity presents: "none" and
// "forged" present none that can be accepted.
var schemeOf = map[string]string{"session": "sessionToken", "admin": "adminToken"}

// accepts reports whether the operation's security (its own, or the document's) lets identity
// through: an operation with no security requirement takes anyone; a secured one only an
// identity whose scheme one of its requirements names. The fuzz's writer trusts neither X-User-ID
// nor a site's JWTs, so no other scheme can be met.
func (o *operation) accepts(identity string) bool {
	reqs := o.op.Security
	if reqs == nil {
		reqs = &o.spec.Doc.Security
	}
	if len(*reqs) == 0 {
		return true
	}
	for _, req := range *reqs {
		if len(req) == 0 { // {}: anonymous allowed
			return true
		}
		if _, ok := req[schemeOf[identity]]; ok {
			return true
		}
	}
	return false
}

// documented reports whether the document lists status for the operation (exactly, as a range
// such as 5XX, or as its default response).
func (o *operation) documented(status int) bool { return o.op.Responses.Status(status) != nil }

// operations lists every operation of spec's document, served by target, in a fixed order (path,
// then method) so that a rapid seed draws the same operations on every run.
func operations(target string, spec *apicheck.Spec) []*operation {
	var ops []*operation
	paths := spec.Doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		item := paths[p]
		methods := item.Operations()
		names := make([]string, 0, len(methods))
		for m := range methods {
			names = append(names, m)
		}
		slices.Sort(names)
		for _, m := range names {
			op := methods[m]
			ops = append(ops, &operation{target: target, spec: spec, method: m, path: p, item: item, op: op,
				params: mergeParams(item.Parameters, op.Parameters), stream: streams(op)})
		}
	}
	return ops
}

// mergeParams returns the path item's parameters with the operation's added, an operation's
// parameter replacing the path item's of the same name and location (OpenAPI 3.1 §4.8.9.1).
func mergeParams(item, op openapi3.Parameters) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	for _, ref := range append(slices.Clone(item), op...) {
		p := ref.Value
		if p == nil {
			continue
		}
		out = slices.DeleteFunc(out, func(q *openapi3.Parameter) bool { return q.Name == p.Name && q.In == p.In })
		out = append(out, p)
	}
	return out
}

// streams reports whether the operation's success is a text/event-stream: the fuzzer then reads
// the status and headers and closes, since the stream never ends by itself.
func streams(op *openapi3.Operation) bool {
	for code, ref := range op.Responses.Map() {
		if !strings.HasPrefix(code, "2") || ref.Value == nil {
			continue
		}
		for ct := range ref.Value.Content {
			if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}
