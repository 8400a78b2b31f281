package web

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/likes/likes/pkg/serve"
)

// AssetPrefix is the path under which the page's files are served. Mount Handler on "/", on
// this prefix and on ClientDir, without stripping any.
const AssetPrefix = "/assets/"

// ClientDir is where the client library's modules are served to any site that embeds likes:
// ClientPath and ElementsPath.
const ClientDir = "/client/"

// ClientPath is where the client library, likes.js, is served.
const ClientPath = ClientDir + "likes.js"

// ElementsPath is where the custom elements (<like-button>, <reaction-bar>) are served; the
// module imports ClientPath.
const ElementsPath = ClientDir + "likes-elements.js"

// site serves the rendered page and its assets.
type site struct {
	page   asset
	client map[string]asset // by file name, under ClientDir
	assets map[string]asset
	csp    string
}

var _ http.Handler = (*site)(nil)

// Handler serves GET / (the page, with cfg rendered into it), GET /assets/{name} (its script,
// style sheet and icon) and GET /client/likes.js and /client/likes-elements.js (the client
// library). Any other path answers 404 JSON and any other method 405 JSON. cfg
// should have passed Validate; Handler panics only if the embedded files are broken, which the
// package's tests rule out.
func Handler(cfg Config) http.Handler {
	cfg = cfg.normalized()
	assets, err := loadAssets()
	if err != nil {
		panic(err)
	}
	client, err := loadClient()
	if err != nil {
		panic(err)
	}
	page, err := renderPage(cfg, assets, client)
	if err != nil {
		panic(err)
	}
	return &site{page: page, client: client, assets: assets, csp: contentSecurityPolicy(cfg.writerOrigin())}
}

// contentSecurityPolicy allows only the page's own files, the stream from its own origin and the
// like requests to the writer: an injected script could neither load nor send anything elsewhere.
func contentSecurityPolicy(writerOrigin string) string {
	connect := "'self'"
	if writerOrigin != "" {
		connect += " " + writerOrigin
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src " + connect + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, kind, ok := s.lookup(r.URL.Path)
	if !ok {
		serve.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		serve.MethodNotAllowed(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", cacheControl(a, r))
	switch kind {
	case kindPage:
		h.Set("Content-Security-Policy", s.csp)
		h.Set("Referrer-Policy", "no-referrer")
	case kindClient:
		// Other sites load the library as a module script, which browsers fetch in CORS mode; it
		// is public code sent without credentials, so any origin may read it, also from a page
		// that isolates itself with COEP.
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// What a path names.
const (
	kindAsset = iota
	kindPage
	kindClient
)

// lookup finds what path names: the page, the client library, an asset, or nothing.
func (s *site) lookup(path string) (a asset, kind int, ok bool) {
	if path == "/" {
		return s.page, kindPage, true
	}
	if name, found := strings.CutPrefix(path, ClientDir); found {
		a, ok = s.client[name]
		return a, kindClient, ok
	}
	name, found := strings.CutPrefix(path, AssetPrefix)
	if !found {
		return asset{}, kindAsset, false
	}
	a, ok = s.assets[name]
	return a, kindAsset, ok
}

// cacheControl lets browsers keep a versioned asset URL for good (its content can never change),
// and makes them revalidate everything else, so a new deployment shows at the next load.
func cacheControl(a asset, r *http.Request) string {
	if r.URL.Path != "/" && r.URL.Query().Get("v") == a.version {
		return "public, max-age=31536000, immutable"
	}
	return "no-cache"
}
