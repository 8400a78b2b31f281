package web

import (
	"bytes"
	"fmt"
	"html/template"
)

// pageData is what index.html is rendered with.
type pageData struct {
	// Config is rendered inside <script type="application/json">. html/template encodes it as JSON
	// and escapes <, > and & in every string, so a value such as "</script>" cannot end the element.
	Config Config
	// Asset maps a file name to its versioned URL, relative so the page also works under a path
	// prefix behind a reverse proxy.
	Asset map[string]string
	// Client maps a client module's file name to its versioned URL, for the modulepreload the
	// elements' own versioned import of likes.js would otherwise wait for.
	Client map[string]string
}

var pageTemplate = template.Must(template.ParseFS(static, "static/index.html"))

// renderPage renders the page once per Handler: its content depends only on the configuration.
func renderPage(cfg Config, assets, client map[string]asset) (asset, error) {
	data := pageData{Config: cfg, Asset: make(map[string]string, len(assets)), Client: make(map[string]string, len(client))}
	for name, a := range assets {
		data.Asset[name] = "assets/" + name + "?v=" + a.version
	}
	for name, a := range client {
		data.Client[name] = "client/" + name + "?v=" + a.version
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, data); err != nil {
		return asset{}, fmt.Errorf("render page: %w", err)
	}
	return newAsset("index.html", buf.Bytes())
}
