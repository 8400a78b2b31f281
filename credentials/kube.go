package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The service account's files in every Pod that mounts its token.
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	apiTimeout        = 10 * time.Second
)

// kubeAPI is the Kubernetes API as a Pod reaches it: its address, its CA and the Pod's token.
type kubeAPI struct {
	base   string // https://host:port
	token  string
	client *http.Client
}

// inCluster reads the API's address from the environment Kubernetes gives every container, and
// the token and CA from the service account's files.
func inCluster() (*kubeAPI, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("not in a Kubernetes Pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset")
	}
	token, err := os.ReadFile(serviceAccountDir + "/token")
	if err != nil {
		return nil, fmt.Errorf("the service account token (automountServiceAccountToken): %w", err)
	}
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s/ca.crt", serviceAccountDir)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &kubeAPI{
		base:   "https://" + net.JoinHostPort(host, port),
		token:  strings.TrimSpace(string(token)),
		client: &http.Client{Transport: tr, Timeout: apiTimeout},
	}, nil
}

// ensureSecret makes the Secret name in namespace from a complete bundle unless it exists. A
// Secret that exists is kept whatever it holds: the data nodes' files were made from it, and a
// second Job that lost the race to create it must not replace it. Only the keys that a Secret
// made by an older version lacks, and that nothing else is made from (addedLater), are added to
// it. It says what it did: "made", "kept", or "added" and the keys.
func (k *kubeAPI) ensureSecret(ctx context.Context, namespace, name, prefix string) (string, error) {
	path := "/api/v1/namespaces/" + namespace + "/secrets"
	for range 5 { // a conflict is another Job adding the same keys: read theirs and check again
		status, body, err := k.do(ctx, http.MethodGet, path+"/"+name, nil)
		if err != nil {
			return "", err
		}
		switch status {
		case http.StatusOK:
			did, retry, err := k.addMissing(ctx, path+"/"+name, body)
			if retry {
				continue
			}
			return did, err
		case http.StatusNotFound:
			return k.createSecret(ctx, path, name, prefix)
		default:
			return "", fmt.Errorf("GET secret %s/%s: %d %s", namespace, name, status, body)
		}
	}
	return "", fmt.Errorf("secret %s/%s: changed by someone else at every attempt to add its missing keys", namespace, name)
}

// addedLater are the files of the bundle that a Secret made by an older version of this program
// may lack, and that no other file is made from: they can be added without touching the rest.
var addedLater = []string{benchKeyFile, sessionKeyFile}

// addMissing adds to the Secret at path (body is its GET) the files of addedLater it lacks, with
// its resourceVersion as a precondition; retry is true when the Secret changed meanwhile.
func (k *kubeAPI) addMissing(ctx context.Context, path, body string) (did string, retry bool, err error) {
	var s struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return "", false, fmt.Errorf("GET %s: %w", path, err)
	}
	add := bundle{}
	var added []string
	for _, f := range addedLater {
		if s.Data[f] != "" {
			continue
		}
		if err := completeOne(add, f); err != nil {
			return "", false, err
		}
		added = append(added, f)
	}
	if len(add) == 0 {
		return "kept", false, nil
	}
	patch := map[string]any{"metadata": map[string]any{"resourceVersion": s.Metadata.ResourceVersion}, "stringData": add}
	status, msg, err := k.doPatch(ctx, path, patch)
	switch {
	case err != nil:
		return "", false, err
	case status == http.StatusOK:
		return "added " + strings.Join(added, ", "), false, nil
	case status == http.StatusConflict:
		return "", true, nil
	}
	return "", false, fmt.Errorf("add %d keys to %s: %d %s", len(add), path, status, msg)
}

// createSecret makes the Secret name at path (the namespace's Secrets) from a new bundle: "made",
// or "kept" when another Job made it first.
func (k *kubeAPI) createSecret(ctx context.Context, path, name, prefix string) (string, error) {
	b := bundle{}
	if err := complete(b, prefix); err != nil {
		return "", err
	}
	secret := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]string{"app.kubernetes.io/part-of": "likes", "app.kubernetes.io/component": "credentials"},
		},
		"type":       "Opaque",
		"stringData": b,
	}
	status, body, err := k.do(ctx, http.MethodPost, path, secret)
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated:
		return "made", nil
	case status == http.StatusConflict: // another Job made it meanwhile: keep theirs
		return "kept", nil
	}
	return "", fmt.Errorf("create secret %s: %d %s", path+"/"+name, status, body)
}

// do sends one request with the Pod's token and returns the status and (a bounded part of) the body.
func (k *kubeAPI) do(ctx context.Context, method, path string, v any) (int, string, error) {
	return k.send(ctx, method, path, "application/json", v)
}

// doPatch sends a JSON merge patch of the object at path.
func (k *kubeAPI) doPatch(ctx context.Context, path string, patch any) (int, string, error) {
	return k.send(ctx, http.MethodPatch, path, "application/merge-patch+json", patch)
}

func (k *kubeAPI) send(ctx context.Context, method, path, contentType string, v any) (int, string, error) {
	var body io.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return 0, "", err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.base+path, body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+k.token)
	req.Header.Set("Accept", "application/json")
	if v != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // a Secret's GET: its ACL files and keys
	return resp.StatusCode, string(msg), nil
}

// podNamespace is the namespace of the Pod this runs in, from its service account's files.
func podNamespace() (string, error) {
	b, err := os.ReadFile(serviceAccountDir + "/namespace")
	if err != nil {
		return "", fmt.Errorf("the Pod's namespace (or give -namespace): %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
