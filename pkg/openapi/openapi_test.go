package openapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestDocumentsAreValidOpenAPI31 loads each document as kin-openapi reads OpenAPI 3.1 and
// validates it: every $ref resolves, every schema is well formed, every operation has responses
// and a unique operationId, and every example matches its schema.
func TestDocumentsAreValidOpenAPI31(t *testing.T) {
	for name, doc := range map[string][]byte{"writer": Writer(), "fanout": Fanout()} {
		t.Run(name, func(t *testing.T) {
			d, err := openapi3.NewLoader().LoadFromData(doc)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !d.IsOpenAPI31OrLater() || d.IsOpenAPI32OrLater() {
				t.Errorf("openapi = %q; want 3.1.x", d.OpenAPI)
			}
			if err := d.Validate(context.Background()); err != nil {
				t.Errorf("validate: %v", err)
			}
			if d.Paths.Len() == 0 {
				t.Error("no paths")
			}
			if d.Paths.Find(Path) == nil {
				t.Errorf("the document does not list %s, where it is served", Path)
			}
		})
	}
}

// TestInvalidDocumentFails shows the validation above can fail: a dangling $ref and a 3.1
// document with a malformed schema are refused.
func TestInvalidDocumentFails(t *testing.T) {
	for name, doc := range map[string]string{
		"dangling ref": `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"$ref":"#/components/responses/Nope"}}}}}}`,
		"bad schema":   `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"x","content":{"application/json":{"schema":{"type":"string","pattern":"(["}}}}}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d, err := openapi3.NewLoader().LoadFromData([]byte(doc))
			if err == nil {
				err = d.Validate(context.Background())
			}
			if err == nil {
				t.Error("loaded and validated; want an error")
			}
		})
	}
}

func TestHandlerServesTheDocument(t *testing.T) {
	srv := httptest.NewServer(Handler(Writer()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d; want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q; want application/json", ct)
	}
	if !bytes.Equal(body, Writer()) {
		t.Errorf("body is %d bytes, not the %d-byte document", len(body), len(Writer()))
	}
}
