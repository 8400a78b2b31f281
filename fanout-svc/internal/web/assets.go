package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
)

// static holds the page template and the files it loads. Nothing is built or fetched at run time.
//
//go:embed static
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

// loadClient reads the client library, likes.js.
func loadClient() (asset, error) {
	body, err := fs.ReadFile(static, "static/client/likes.js")
	if err != nil {
		return asset{}, fmt.Errorf("read client library: %w", err)
	}
	return newAsset("likes.js", body)
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
