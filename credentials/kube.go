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
// second Job that lost the race to create it must not replace it. It reports whether it made it.
func (k *kubeAPI) ensureSecret(ctx context.Context, namespace, name, prefix string) (bool, error) {
	path := "/api/v1/namespaces/" + namespace + "/secrets"
	status, body, err := k.do(ctx, http.MethodGet, path+"/"+name, nil)
	if err != nil {
		return false, err
	}
	switch status {
	case http.StatusOK:
		return false, nil
	case http.StatusNotFound:
	default:
		return false, fmt.Errorf("GET secret %s/%s: %d %s", namespace, name, status, body)
	}
	b := bundle{}
	if err := complete(b, prefix); err != nil {
		return false, err
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
	status, body, err = k.do(ctx, http.MethodPost, path, secret)
	switch {
	case err != nil:
		return false, err
	case status == http.StatusCreated:
		return true, nil
	case status == http.StatusConflict: // another Job made it meanwhile: keep theirs
		return false, nil
	}
	return false, fmt.Errorf("create secret %s/%s: %d %s", namespace, name, status, body)
}

// do sends one request with the Pod's token and returns the status and (a bounded part of) the body.
func (k *kubeAPI) do(ctx context.Context, method, path string, v any) (int, string, error) {
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
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
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
