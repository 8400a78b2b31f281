package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
)

// static holds the page template, the files it loads and the client library's modules. Nothing
// is built or fetched at run time. The patterns name the served files only: static/client is
// also the npm package, whose node_modules, tests and example must not end up in the binary.
//
//go:embed static/index.html static/assets static/client/likes.js static/client/likes-elements.js
var static embed.FS

// contentTypes names the type of every file the page loads. It is fixed here rather than taken
// from the machine's mime tables, which differ between hosts (some map .js to
// application/javascript, some know no .svg).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one response body with what its headers need.
type asset struct {
	body        []byte
	contentType string
	version     string // short content hash: the ETag and the ?v= cache buster
}

func newAsset(name string, body []byte) (asset, error) {
	ct, ok := contentTypes[path.Ext(name)]
	if !ok {
		return asset{}, fmt.Errorf("asset %s: no content type for its extension", name)
	}
	sum := sha256.Sum256(body)
	return asset{body: body, contentType: ct, version: hex.EncodeToString(sum[:6])}, nil
}

// etag quotes the version as an entity tag.
func (a asset) etag() string { return `"` + a.version + `"` }

// clientModules are the client library's modules, served under ClientDir, each after the
// modules it imports.
var clientModules = []string{"likes.js", "likes-elements.js"}

// loadClient reads the client library's modules, keyed by file name. An import of another
// module ("./likes.js") is rewritten to that module's versioned URL ("./likes.js?v=..."), so a
// module a site pins at its own ?v= always gets the library it was built with, and its version
// changes with the library's.
func loadClient() (map[string]asset, error) {
	modules := make(map[string]asset, len(clientModules))
	for _, name := range clientModules {
		body, err := fs.ReadFile(static, "static/client/"+name)
		if err != nil {
			return nil, fmt.Errorf("read client library: %w", err)
		}
		for dep, a := range modules {
			from := []byte(`from "./` + dep + `";`)
			body = bytes.ReplaceAll(body, from, []byte(`from "./`+dep+"?v="+a.version+`";`))
		}
		a, err := newAsset(name, body)
		if err != nil {
			return nil, err
		}
		modules[name] = a
	}
	return modules, nil
}

// loadAssets reads every embedded file under static/assets, keyed by file name.
func loadAssets() (map[string]asset, error) {
	entries, err := fs.ReadDir(static, "static/assets")
	if err != nil {
		return nil, fmt.Errorf("read assets: %w", err)
	}
	assets := make(map[string]asset, len(entries))
	for _, e := range entries {
		body, err := fs.ReadFile(static, "static/assets/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("read asset %s: %w", e.Name(), err)
		}
		a, err := newAsset(e.Name(), body)
		if err != nil {
			return nil, err
		}
		assets[e.Name()] = a
	}
	return assets, nil
}
