package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/likes/likes/pkg/redisacl"
)

// fakeAPI is the part of the Kubernetes API ensureSecret uses: GET and POST of Secrets in one
// namespace, checking the bearer token. A fake is enough here: the kube suite runs the Job on a
// real cluster.
type fakeAPI struct {
	mu             sync.Mutex
	secrets        map[string]map[string]string
	posts          int
	conflictOnPost bool
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer pod-token" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	const base = "/api/v1/namespaces/likes/secrets"
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, base+"/"):
		if _, ok := f.secrets[strings.TrimPrefix(r.URL.Path, base+"/")]; !ok {
			http.Error(w, `{"reason":"NotFound"}`, http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{}`))
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
		w.WriteHeader(http.StatusCreated)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
	}
}

func TestKubeSecretIsMadeOnce(t *testing.T) {
	f := &fakeAPI{secrets: map[string]map[string]string{}}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	api := &kubeAPI{base: srv.URL, token: "pod-token", client: srv.Client()}
	ctx := context.Background()

	made, err := api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || !made {
		t.Fatalf("first run: made %v, %v; want made", made, err)
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
	made, err = api.ensureSecret(ctx, "likes", "likes-redis-credentials", "likes:")
	if err != nil || made || f.posts != 1 {
		t.Fatalf("second run: made %v, %v, %d creations; want the Secret kept", made, err, f.posts)
	}

	f.conflictOnPost = true
	made, err = api.ensureSecret(ctx, "likes", "made-by-another-job", "likes:")
	if err != nil || made {
		t.Errorf("a Secret another Job made first: made %v, %v; want kept, no error", made, err)
	}

	api.token = "stolen"
	if _, err := api.ensureSecret(ctx, "likes", "other", "likes:"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a refused token: %v; want the API's 401 reported", err)
	}
}
