package kubetest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/likes/likes/pkg/sse"
	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/clienttest"
	"github.com/likes/likes/testkit/poll"
	"github.com/likes/likes/testkit/routes"
)

// The Ingress controller scripts/kube/haproxy-ingress.yaml runs, and the host the Ingresses serve.
const (
	ingressNamespace = "haproxy-controller"
	ingressService   = "haproxy-ingress"
	publicHost       = "likes.example.com"
)

// ingressSamples are, for each path of the chart's Ingresses, the Service that serves it and a
// request path under it that this Service answers otherwise than the other one does (a status or
// a content type of its own), so that the answer through the controller tells which Service it
// came from. A path added to the Ingresses without a sample here fails the step. /assets names no
// request: the step takes the first file the page links.
var ingressSamples = map[string]struct{ service, path string }{
	"/like":    {"writer-svc", "/like/42"},           // 405 to a GET
	"/react":   {"writer-svc", "/react/42/like"},     // 405 to a GET
	"/count":   {"writer-svc", "/count/42"},          // 200
	"/likes":   {"writer-svc", "/likes/42/users"},    // 200
	"/me":      {"writer-svc", "/me/likes"},          // 401 without a session
	"/counts":  {"writer-svc", "/counts?posts=42"},   // 200
	"/posts":   {"writer-svc", "/posts/42/timeline"}, // 200
	"/session": {"writer-svc", "/session"},           // 405 to a GET
	"/":        {"fanout-svc", "/"},                  // the page
	"/assets":  {"fanout-svc", ""},                   // a file of the page
	"/client":  {"fanout-svc", "/client/likes.js"},   // the client library
	"/sse":     {"fanout-svc", "/sse/42"},            // a stream
}

// internalSamples are, for each internal prefix (routes.Internal), a path within it that a
// service answers directly with something other than 404.
var internalSamples = map[string]string{
	"/healthz": "/healthz",
	"/readyz":  "/readyz",
	"/metrics": "/metrics",
	"/admin":   "/admin/users/42/likes",
}

// answer is what a request got: enough to tell a writer's, a fanout node's and the controller's
// answers apart.
type answer struct {
	status      int
	contentType string
	proto       string
}

func (a answer) String() string { return fmt.Sprintf("%d %q (%s)", a.status, a.contentType, a.proto) }

// sameSource is whether a and b came from the same kind of server: same status and content type.
func (a answer) sameSource(b answer) bool {
	return a.status == b.status && a.contentType == b.contentType
}

// ingressClient sends every request for publicHost to the controller's Service at addr
// (host:port, TLS), with SNI publicHost and its self-signed default certificate accepted.
func ingressClient(addr string) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 10 * time.Second,
		// The API's answers are what is compared: a redirect is one of them.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, addr)
			},
			TLSClientConfig:   &tls.Config{ServerName: publicHost, InsecureSkipVerify: true}, //nolint:gosec // the controller's self-signed default certificate
			ForceAttemptHTTP2: true,
		},
	}
}

// controllerAddr is the controller Service's HTTPS address (cluster IP:443).
func controllerAddr(t *testing.T) string {
	t.Helper()
	ip := strings.TrimSpace(mustKubectl(t, time.Minute, "-n", ingressNamespace, "get", "svc", ingressService, "-o", "jsonpath={.spec.clusterIP}"))
	if ip == "" || ip == "None" {
		t.Fatalf("service %s/%s has no cluster IP (%q)", ingressNamespace, ingressService, ip)
	}
	return net.JoinHostPort(ip, "443")
}

// ask sends method to url and returns the answer's head (a stream's too: the body is not read).
func ask(c *http.Client, method, url string) (answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return answer{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return answer{status: resp.StatusCode, contentType: ct, proto: resp.Proto}, nil
}

// stepIngress: the public routes through the Ingress controller. Every path of the chart's
// Ingresses, asked through the controller (HTTPS, Host and SNI likes.example.com), gets the
// answer its own Service gives, which the other Service does not give; every internal prefix gets
// the controller's 404; a like POSTed through the controller reaches viewers connected through it.
func stepIngress(t *testing.T, d deployment, got *figures) {
	start := time.Now()
	c := ingressClient(controllerAddr(t))
	defer c.CloseIdleConnections()
	direct := &http.Client{Timeout: 10 * time.Second}
	defer direct.CloseIdleConnections()
	base := "https://" + publicHost
	svcURL := map[string]string{"writer-svc": d.writer, "fanout-svc": d.fanout}

	paths := ingressPaths(t)
	// The controller may not have loaded the release's Ingresses yet: its first answer waits.
	await(t, time.Minute, time.Second, "the controller to route the page", func() error {
		a, err := ask(c, http.MethodGet, base+"/")
		if err == nil && a.status != http.StatusOK {
			err = fmt.Errorf("GET / answered %v", a)
		}
		return err
	})
	for _, p := range paths {
		want, ok := ingressSamples[p.path]
		if !ok {
			t.Errorf("Ingress path %s (to %s) has no sample request in ingressSamples", p.path, p.service)
			continue
		}
		if p.service != want.service {
			t.Errorf("Ingress path %s goes to %s; want %s", p.path, p.service, want.service)
			continue
		}
		sample := want.path
		if p.path == "/assets" {
			sample = pageAsset(t, c, base)
		}
		other := "writer-svc"
		if p.service == other {
			other = "fanout-svc"
		}
		via, err1 := ask(c, http.MethodGet, base+sample)
		own, err2 := ask(direct, http.MethodGet, svcURL[p.service]+sample)
		not, err3 := ask(direct, http.MethodGet, svcURL[other]+sample)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Errorf("GET %s: %v", sample, err)
			continue
		}
		switch {
		case own.sameSource(not):
			t.Errorf("GET %s: %s and %s both answer %v; pick a sample that tells them apart", sample, p.service, other, own)
		case !via.sameSource(own):
			t.Errorf("GET %s through the controller: %v; want %s's answer %v (%s answers %v)", sample, via, p.service, own, other, not)
		case via.proto != "HTTP/2.0":
			t.Errorf("GET %s through the controller over %s; want HTTP/2 ending at the controller", sample, via.proto)
		}
	}
	for _, prefix := range routes.Internal() {
		sample := internalSamples[prefix]
		if sample == "" {
			t.Errorf("internal prefix %s has no sample in internalSamples", prefix)
			continue
		}
		via, err1 := ask(c, http.MethodGet, base+sample)
		writer, err2 := ask(direct, http.MethodGet, d.writer+sample)
		if err := errors.Join(err1, err2); err != nil {
			t.Errorf("GET %s: %v", sample, err)
			continue
		}
		if writer.status == http.StatusNotFound {
			t.Errorf("GET %s: the writer answers 404 itself; pick a sample it serves", sample)
		}
		// A service's 404 is JSON; the controller's default backend answers HTML.
		if via.status != http.StatusNotFound || via.contentType == "application/json" {
			t.Errorf("GET %s through the controller: %v; want the controller's own 404 (the writer answers %v)", sample, via, writer)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	routed := time.Since(start)
	likeThroughIngress(t, c, base, d.writer)
	got.add(t, "ingress: %d public paths routed to their Services and %d internal prefixes refused by HAProxy Ingress in %v; a like through it reached 4 viewers through it in %v",
		len(paths), len(routes.Internal()), routed.Round(time.Millisecond), (time.Since(start) - routed).Round(time.Millisecond))
}

// ingressPath is one path of an Ingress rule for publicHost and the Service it goes to.
type ingressPath struct {
	path, service string
}

// ingressPaths reads the release's Ingresses from the cluster: every path of their publicHost
// rules. Each must have the IngressClass haproxy the controller serves.
func ingressPaths(t *testing.T) []ingressPath {
	t.Helper()
	out := mustKubectl(t, time.Minute, "-n", namespace, "get", "ingress", "-l", "app.kubernetes.io/instance="+release, "-o", "json")
	var list networkingv1.IngressList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get ingress: %v", err)
	}
	var paths []ingressPath
	for _, ing := range list.Items {
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "haproxy" {
			t.Fatalf("Ingress %s has class %v; want haproxy", ing.Name, ing.Spec.IngressClassName)
		}
		for _, rule := range ing.Spec.Rules {
			if rule.Host != publicHost || rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil {
					t.Fatalf("Ingress %s path %s has no Service backend", ing.Name, p.Path)
				}
				paths = append(paths, ingressPath{path: p.Path, service: p.Backend.Service.Name})
			}
		}
	}
	for want := range ingressSamples {
		if !slices.ContainsFunc(paths, func(p ingressPath) bool { return p.path == want }) {
			t.Errorf("the release's Ingresses do not route %s on %s", want, publicHost)
		}
	}
	return paths
}

// assetLink is a link of the page to one of its files: relative, "assets/app.js?v=<hash>".
var assetLink = regexp.MustCompile(`"/?(assets/[^"]+)"`)

// pageAsset is the first /assets file the page links, as an absolute path.
func pageAsset(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatalf("GET / through the controller: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("GET / through the controller: %v", err)
	}
	link := assetLink.FindSubmatch(body)
	if link == nil {
		t.Fatalf("the page links no /assets file:\n%s", tail(string(body), 2000))
	}
	return "/" + string(link[1])
}

// likeThroughIngress: a session taken and a like POSTed through the controller, seen by viewers
// connected to /sse/<post> through it.
func likeThroughIngress(t *testing.T, c *http.Client, base, writer string) {
	t.Helper()
	const post = "kube-ingress"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	viewers := make([]*streamViewer, 4)
	for i := range viewers {
		viewers[i] = &streamViewer{connected: make(chan struct{})}
		wg.Go(func() { viewers[i].watch(ctx, c, base+"/sse/"+post) })
	}
	for _, v := range viewers {
		select {
		case <-v.connected:
		case <-time.After(90 * time.Second):
			t.Fatalf("a viewer through the controller not connected after 90s: %v", v.err())
		}
	}
	var s clienttest.Session
	await(t, time.Minute, time.Second, "a session through the controller", func() error {
		return send(c, http.MethodPost, base+"/session", "", &s)
	})
	var reply clienttest.LikeReply
	if err := send(c, http.MethodPost, base+"/like/"+post, s.Token, &reply); err != nil || !reply.Liked {
		t.Fatalf("like through the controller: %+v %v", reply, err)
	}
	// Stored: the writer's Service counts it, asked directly.
	if n := clienttest.CountOf(t, writer, post); n != reply.Count {
		t.Fatalf("writer-svc counts %d likes of %s; the like through the controller answered %d", n, post, reply.Count)
	}
	poll.Check(t, 10*time.Second, func() error {
		for i, v := range viewers {
			if n, err := v.count(post); n != reply.Count {
				return fmt.Errorf("viewer %d through the controller: count %d of %s; want %d (stream: %w)", i, n, post, reply.Count, err)
			}
		}
		return nil
	})
}

// send sends method to url through c, with a bearer token when one is given, and decodes a 200
// answer's JSON into v.
func send(c *http.Client, method, url, token string, v any) error {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %s", method, url, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// streamViewer reads one event stream through the controller and keeps the newest count of each
// post.
type streamViewer struct {
	connected chan struct{} // closed when the stream's head arrived with 200

	mu      sync.Mutex
	counts  map[string]int64
	lastErr error
}

func (v *streamViewer) err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastErr
}

// watch reads the stream at url until ctx ends. Until the stream is opened it asks again every
// half second, as a client retries a refused stream: a node that lost Redis for a moment, or a
// controller without a Ready endpoint yet, answers 503 (the error is kept for the test's report).
func (v *streamViewer) watch(ctx context.Context, c *http.Client, url string) {
	stream := *c
	stream.Timeout = 0 // a stream lasts until ctx ends
	var resp *http.Response
	for resp == nil {
		r, err := open(ctx, &stream, url)
		if err == nil {
			resp = r
			break
		}
		v.fail(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	defer resp.Body.Close()
	v.mu.Lock()
	v.lastErr = nil // connected: the refusals before no longer describe the stream
	v.mu.Unlock()
	close(v.connected)
	var dec sse.Decoder
	buf := make([]byte, 4<<10)
	for {
		n, err := resp.Body.Read(buf)
		if ferr := dec.Feed(buf[:n], v.handle); ferr != nil {
			v.fail(ferr)
			return
		}
		if err != nil {
			v.fail(err)
			return
		}
	}
}

// open asks for the stream at url; an answer other than 200 is an error.
func open(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

func (v *streamViewer) handle(e *sse.Event) {
	if string(e.Event) != sse.EventCount {
		return
	}
	u, err := update.Parse(e.Data)
	if err != nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.counts == nil {
		v.counts = map[string]int64{}
	}
	v.counts[u.PostID] = u.Count
}

// count is the newest count of post the viewer saw, and the stream's error if it ended.
func (v *streamViewer) count(post string) (int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.counts[post], v.lastErr
}

func (v *streamViewer) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.lastErr = err
}
