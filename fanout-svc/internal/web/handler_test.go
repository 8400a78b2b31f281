package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// get serves one request through a real HTTP server, so headers are what a browser would see.
func get(t *testing.T, srv *httptest.Server, method, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp, string(body)
}

func newServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(cfg))
	t.Cleanup(srv.Close)
	return srv
}

var configBlock = regexp.MustCompile(`(?s)<script type="application/json" id="likes-config">(.*?)</script>`)

// pageConfig extracts and decodes the configuration the page would read.
func pageConfig(t *testing.T, page string) Config {
	t.Helper()
	m := configBlock.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("page has no likes-config block:\n%s", page)
	}
	var got Config
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("config block %q is not JSON: %v", m[1], err)
	}
	return got
}

func TestPageServesConfiguration(t *testing.T) {
	srv := newServer(t, Config{WriterURL: "http://127.0.0.1:8080/", Posts: []string{"42", "launch-day"}})
	resp, page := get(t, srv, http.MethodGet, "/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / status = %d; want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q; want text/html; charset=utf-8", ct)
	}
	want := Config{WriterURL: "http://127.0.0.1:8080", Posts: []string{"42", "launch-day"}}
	if got := pageConfig(t, page); !reflect.DeepEqual(got, want) {
		t.Errorf("page config = %+v; want %+v (trailing slash trimmed)", got, want)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, part := range []string{"script-src 'self'", "connect-src 'self' http://127.0.0.1:8080;", "default-src 'none'"} {
		if !strings.Contains(csp, part) {
			t.Errorf("Content-Security-Policy = %q; want it to contain %q", csp, part)
		}
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("page Cache-Control = %q; want no-cache", got)
	}
}

func TestPageConfigCannotEscapeItsElement(t *testing.T) {
	hostile := `</script><script>alert(1)</script><!--&'"` + "\u2028"
	cfg := Config{WriterURL: "http://w.example/" + hostile, Posts: []string{hostile, "ok"}, Token: hostile}
	_, page := get(t, newServer(t, cfg), http.MethodGet, "/", nil)
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("page has %d <script elements; want 2 (config block and app.js)", n)
	}
	if strings.Contains(page, "alert(1)</script>") || strings.Contains(page, "<!--&") {
		t.Errorf("hostile text appears unescaped in the page:\n%s", page)
	}
	got := pageConfig(t, page)
	if want := cfg.normalized(); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded config = %+v; want %+v (the exact values, escaped only in transit)", got, want)
	}
}

func TestPageWithoutWriterURLAllowsOnlyOwnOrigin(t *testing.T) {
	resp, page := get(t, newServer(t, Config{Posts: []string{"1"}}), http.MethodGet, "/", nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("Content-Security-Policy = %q; want connect-src 'self' only", csp)
	}
	if got := pageConfig(t, page); got.WriterURL != "" || got.Token != "" {
		t.Errorf("page config = %+v; want empty writer URL and token", got)
	}
	if strings.Contains(page, `"token":`) {
		t.Errorf("page mentions a token though none is configured")
	}
}

// assetURLs returns the versioned asset URLs the page links to, by file name.
func assetURLs(t *testing.T, page string) map[string]string {
	t.Helper()
	urls := map[string]string{}
	for _, m := range regexp.MustCompile(`(?:src|href)="(assets/([a-z]+\.[a-z]+)\?v=[0-9a-f]+)"`).FindAllStringSubmatch(page, -1) {
		urls[m[2]] = "/" + m[1]
	}
	return urls
}

func TestAssetsHaveTheirContentTypes(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	_, page := get(t, srv, http.MethodGet, "/", nil)
	urls := assetURLs(t, page)
	tests := []struct {
		give string
		want string
	}{
		{give: "app.js", want: "text/javascript; charset=utf-8"},
		{give: "style.css", want: "text/css; charset=utf-8"},
		{give: "favicon.svg", want: "image/svg+xml"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			url, ok := urls[tt.give]
			if !ok {
				t.Fatalf("page does not link %s; links %v", tt.give, urls)
			}
			resp, body := get(t, srv, http.MethodGet, url, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s status = %d; want 200", url, resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.want {
				t.Errorf("Content-Type = %q; want %q", got, tt.want)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q; want nosniff", got)
			}
			if got := resp.Header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
				t.Errorf("versioned URL Cache-Control = %q; want immutable", got)
			}
			if len(body) == 0 {
				t.Errorf("GET %s body is empty", url)
			}
		})
	}
}

func TestAssetRevalidation(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	resp, _ := get(t, srv, http.MethodGet, "/assets/app.js", nil)
	if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("unversioned Cache-Control = %q; want no-cache", got)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on /assets/app.js")
	}
	again, body := get(t, srv, http.MethodGet, "/assets/app.js", map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("revalidation: status %d, %d bytes; want 304 and no body", again.StatusCode, len(body))
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	tests := []struct {
		method, path string
		wantStatus   int
		wantError    string
	}{
		{http.MethodGet, "/index.html", http.StatusNotFound, "not found"},
		{http.MethodGet, "/assets/", http.StatusNotFound, "not found"},
		{http.MethodGet, "/assets/missing.js", http.StatusNotFound, "not found"},
		{http.MethodGet, "/client/other.js", http.StatusNotFound, "not found"},
		{http.MethodPost, ClientPath, http.StatusMethodNotAllowed, "method not allowed"},
		{http.MethodGet, "/assets/../index.html", http.StatusNotFound, "not found"},
		{http.MethodGet, "/static/index.html", http.StatusNotFound, "not found"},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "method not allowed"},
		{http.MethodDelete, "/assets/app.js", http.StatusMethodNotAllowed, "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := get(t, srv, tt.method, tt.path, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d; want %d", resp.StatusCode, tt.wantStatus)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q; want application/json", ct)
			}
			var got struct{ Error string }
			if err := json.Unmarshal([]byte(body), &got); err != nil || got.Error != tt.wantError {
				t.Errorf("body = %q; want {\"error\":%q}", body, tt.wantError)
			}
			if tt.wantStatus == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q; want GET, HEAD", resp.Header.Get("Allow"))
			}
		})
	}
}

func TestHeadServesHeadersOnly(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	resp, body := get(t, srv, http.MethodHead, "/", nil)
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD /: status %d, %d body bytes; want 200 and none", resp.StatusCode, len(body))
	}
	if resp.ContentLength <= 0 {
		t.Errorf("HEAD / Content-Length = %d; want the page's size", resp.ContentLength)
	}
}

// TestClientLibrary: /client/likes.js and /client/likes-elements.js are JavaScript any site may
// load as modules (CORS, CORP), revalidated when unversioned and immutable at their versioned
// URLs, like the page's assets.
func TestClientLibrary(t *testing.T) {
	for _, tt := range []struct{ path, export string }{
		{ClientPath, "export function connect("},
		{ElementsPath, "export function configure("},
	} {
		t.Run(tt.path, func(t *testing.T) { testClientModule(t, tt.path, tt.export) })
	}
}

func testClientModule(t *testing.T, path, export string) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	resp, body := get(t, srv, http.MethodGet, path, map[string]string{"Origin": "https://blog.example"})
	want := map[string]string{
		"Content-Type":                 "text/javascript; charset=utf-8",
		"X-Content-Type-Options":       "nosniff",
		"Access-Control-Allow-Origin":  "*",
		"Cross-Origin-Resource-Policy": "cross-origin",
		"Cache-Control":                "no-cache",
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s status = %d; want 200", path, resp.StatusCode)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q; want %q", k, got, v)
		}
	}
	if !strings.Contains(body, export) {
		t.Errorf("%s does not contain %q", path, export)
	}
	// Nothing a strict Content-Security-Policy (no 'unsafe-eval', no inline code) would block.
	for _, banned := range []string{"eval(", "new Function", "innerHTML", "setTimeout(\"", "document.write"} {
		if strings.Contains(body, banned) {
			t.Errorf("%s contains %q, which a strict CSP forbids", path, banned)
		}
	}
	etag := resp.Header.Get("ETag")
	versioned, _ := get(t, srv, http.MethodGet, path+"?v="+strings.Trim(etag, `"`), nil)
	if got := versioned.Header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
		t.Errorf("versioned %s Cache-Control = %q; want immutable", path, got)
	}
	again, rest := get(t, srv, http.MethodGet, path, map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified || rest != "" {
		t.Errorf("revalidation: status %d, %d bytes; want 304 and no body", again.StatusCode, len(rest))
	}
	if page, _ := get(t, srv, http.MethodGet, "/", nil); page.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("the page itself allows cross-origin reads; only the library should")
	}
}

// TestPageModulesResolve: every module the page loads, and every module those import, resolves
// to a JavaScript file this handler serves, so the page cannot ship a broken import; the page
// preloads the elements and the very likes.js URL they import.
func TestPageModulesResolve(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	_, page := get(t, srv, http.MethodGet, "/", nil)
	importRe := regexp.MustCompile(`(?m)^import .* from "([^"]+)";`)
	queue := []string{assetURLs(t, page)["app.js"]}
	seen := map[string]bool{}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		resp, body := get(t, srv, http.MethodGet, u, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("GET %s: %d %s; want 200 JavaScript", u, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		base, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range importRe.FindAllStringSubmatch(body, -1) {
			ref, err := url.Parse(m[1])
			if err != nil {
				t.Fatal(err)
			}
			queue = append(queue, base.ResolveReference(ref).String())
		}
	}
	var library string
	for u := range seen {
		if strings.HasPrefix(u, ClientPath+"?v=") {
			library = u
		}
	}
	if !seen[ElementsPath] || library == "" {
		t.Fatalf("the page's modules %v do not import %s and a versioned %s", seen, ElementsPath, ClientPath)
	}
	for _, preload := range []string{ElementsPath, library} {
		if want := `<link rel="modulepreload" href="` + strings.TrimPrefix(preload, "/") + `">`; !strings.Contains(page, want) {
			t.Errorf("page does not preload %s (%s)", preload, want)
		}
	}
}

// TestElementsPinTheLibrary: likes-elements.js imports likes.js at the version served with it,
// so a site that pins the elements at their ?v= never gets them with another library, and the
// elements' version changes whenever the library's does.
func TestElementsPinTheLibrary(t *testing.T) {
	srv := newServer(t, Config{Posts: []string{"1"}})
	lib, _ := get(t, srv, http.MethodGet, ClientPath, nil)
	resp, body := get(t, srv, http.MethodGet, ElementsPath, map[string]string{"Origin": "https://blog.example"})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: %d, Access-Control-Allow-Origin %q; want 200 and *", ElementsPath, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	want := `from "./likes.js?v=` + strings.Trim(lib.Header.Get("ETag"), `"`) + `";`
	if !strings.Contains(body, want) {
		t.Errorf("%s does not import the library as %s", ElementsPath, want)
	}
	if strings.Contains(body, `from "./likes.js";`) {
		t.Errorf("%s still imports the unversioned library", ElementsPath)
	}
	for _, name := range []string{"package.json", "likes.d.ts", "test/likes.test.js", "node_modules/esbuild/package.json"} {
		if r, _ := get(t, srv, http.MethodGet, ClientDir+name, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s%s = %d; want 404: the npm package's other files are not served", ClientDir, name, r.StatusCode)
		}
	}
}

func TestPageKnowsTheHeartbeat(t *testing.T) {
	_, page := get(t, newServer(t, Config{Posts: []string{"1"}, HeartbeatMS: 15000}), http.MethodGet, "/", nil)
	if got := pageConfig(t, page); got.HeartbeatMS != 15000 {
		t.Errorf("page config heartbeat = %d ms; want 15000", got.HeartbeatMS)
	}
}
