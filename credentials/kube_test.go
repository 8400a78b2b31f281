package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/likes/likes/pkg/redisacl"
	"github.com/likes/likes/pkg/sessiontoken"
)

// fakeAPI is the part of the Kubernetes API ensureSecret uses: GET, POST and merge PATCH of
// Secrets in one namespace, with resourceVersion preconditions, checking the bearer token. A fake
// is enough here: the kube suite runs the Job on a real cluster.
type fakeAPI struct {
	mu             sync.Mutex
	secrets        map[string]map[string]string
	versions       map[string]int
	posts, patches int
	conflictOnPost bool
	// beforePatch, when set, runs before a PATCH is applied: another Job's change.
	beforePatch func(f *fakeAPI)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer pod-token" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	const base = "/api/v1/namespaces/likes/secrets"
	name := strings.TrimPrefix(r.URL.Path, base+"/")
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, base+"/"):
		data, ok := f.secrets[name]
		if !ok {
			http.Error(w, `{"reason":"NotFound"}`, http.StatusNotFound)
			return
		}
		enc := map[string]string{}
		for k, v := range data {
			enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"metadata": map[string]any{"resourceVersion": strconv.Itoa(f.versions[name])}, "data": enc})
	case r.Method == http.MethodPost && r.URL.Path == base:
		f.posts++
		if f.conflictOnPost {
			http.Error(w, `{"reason":"AlreadyExists"}`, http.StatusConflict)
			return
		}
		var s struct {
			Metadata   struct{ Name string }
			StringData map[string]string
		}
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.secrets[s.Metadata.Name] = s.StringData
		f.versions[s.Metadata.Name]++
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPatch && r.Header.Get("Content-Type") == "application/merge-patch+json" && f.secrets[name] != nil:
		f.patches++
		if f.beforePatch != nil {
			f.beforePatch(f)
			f.beforePatch = nil
		}
		var p struct {
			Metadata   struct{ ResourceVersion string }
			StringData map[string]string
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if p.Metadata.ResourceVersion != strconv.Itoa(f.versions[name]) {
			http.Error(w, `{"reason":"Conflict"}`, http.StatusConflict)
			return
		}
		for k, v := range p.StringData {
			f.secrets[name][k] = v
		}
		f.versions[name]++
		_, _ = w.Write([]byte(`{}`))
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
	}
}

func newFakeAPI(t *testing.T) (*fakeAPI, *kubeAPI) {
	f := &fakeAPI{secrets: map[string]map[string]string{}, versions: map[string]int{}}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	return f, &kubeAPI{base: srv.URL, token: "pod-token", client: srv.Client()}
}

func TestKubeSecretIsMadeOnce(t *testing.T) {
	f, api := newFakeAPI(t)
	ctx := context.Background()

	did, err := api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || did != "made" {
		t.Fatalf("first run: %q, %v; want made", did, err)
	}
	s := f.secrets["likes-redis-credentials"]
	for _, key := range append(secretFiles(), dataACLFile, sentinelACLFile) {
		if s[key] == "" {
			t.Errorf("the Secret lacks %s", key)
		}
	}
	if !strings.Contains(s[dataACLFile], "user "+redisacl.Fanout+" on") {
		t.Errorf("the data nodes' ACL file names no fanout user:\n%s", s[dataACLFile])
	}
	if _, err := sessiontoken.ParseKeyFile([]byte(s[sessionKeyFile])); err != nil {
		t.Errorf("the Secret's %s: %v; want a key file the writers take", sessionKeyFile, err)
	}
	did, err = api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || did != "kept" || f.posts != 1 || f.patches != 0 {
		t.Fatalf("second run: %q, %v, %d creations, %d patches; want the Secret kept", did, err, f.posts, f.patches)
	}

	f.conflictOnPost = true
	did, err = api.ensureSecret(ctx, "likes", "made-by-another-job", "likes:")
	if err != nil || did != "kept" {
		t.Errorf("a Secret another Job made first: %q, %v; want kept, no error", did, err)
	}

	api.token = "stolen"
	if _, err := api.ensureSecret(ctx, "likes", "other", "likes:"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a refused token: %v; want the API's 401 reported", err)
	}
}

// TestKubeSecretGetsSessionKeyAdded: a Secret made before session.key existed gets one, and
// nothing else of it changes; one added meanwhile by another Job is kept, not replaced.
func TestKubeSecretGetsSessionKeyAdded(t *testing.T) {
	f, api := newFakeAPI(t)
	ctx := context.Background()
	old := bundle{}
	if err := complete(old, "likes:"); err != nil {
		t.Fatal(err)
	}
	delete(old, sessionKeyFile)
	f.secrets["likes-redis-credentials"] = maps.Clone(old)

	did, err := api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || did != "added "+sessionKeyFile {
		t.Fatalf("a Secret without %s: %q, %v; want it added", sessionKeyFile, did, err)
	}
	got := f.secrets["likes-redis-credentials"]
	if _, err := sessiontoken.ParseKeyFile([]byte(got[sessionKeyFile])); err != nil {
		t.Errorf("the added %s: %v", sessionKeyFile, err)
	}
	for k, v := range old {
		if got[k] != v {
			t.Errorf("adding %s changed %s", sessionKeyFile, k)
		}
	}

	// Another Job adds its key between this one's GET and PATCH: the PATCH conflicts, and the
	// key read again is theirs, kept.
	delete(f.secrets["likes-redis-credentials"], sessionKeyFile)
	theirs, _ := newSessionKey()
	f.beforePatch = func(f *fakeAPI) {
		f.secrets["likes-redis-credentials"][sessionKeyFile] = theirs
		f.versions["likes-redis-credentials"]++
	}
	did, err = api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || did != "kept" || f.secrets["likes-redis-credentials"][sessionKeyFile] != theirs {
		t.Errorf("a key another Job added meanwhile: %q, %v; want theirs kept", did, err)
	}
}
