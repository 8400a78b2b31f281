package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"fmt"
	"net/http"
	"time"

	"github.com/MicahParks/jwkset"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// JWKSOptions configures a remote key set.
type JWKSOptions struct {
	URL     string
	Refresh time.Duration // periodic refetch; also bounds how long a revoked key stays trusted
	// UnknownKIDEvery bounds refetches triggered by tokens with a key id not in the cached set
	// (a key rotation), so forged key ids cannot make the writer hammer the identity provider.
	UnknownKIDEvery time.Duration
	Client          *http.Client
}

// JWKS is a KeySet fetched from an identity provider's JWKS URL and cached in memory.
type JWKS struct {
	store jwkset.Storage
}

var _ KeySet = (*JWKS)(nil)

// NewJWKS fetches the key set once (a failure is logged, not fatal: the provider may come up
// later and an unknown key id triggers a refetch) and refreshes it every o.Refresh. The refresh
// goroutine belongs to ctx and exits when ctx is done.
func NewJWKS(ctx context.Context, o JWKSOptions, log *zap.Logger) (*JWKS, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.UnknownKIDEvery <= 0 {
		o.UnknownKIDEvery = 10 * time.Second
	}
	remote, err := jwkset.NewStorageFromHTTP(o.URL, jwkset.HTTPClientStorageOptions{
		Client:                    o.Client,
		Ctx:                       ctx,
		HTTPTimeout:               10 * time.Second,
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           o.Refresh,
		RefreshErrorHandler: func(_ context.Context, err error) {
			log.Warn("jwks refresh", zap.String("url", o.URL), zap.Error(err))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", o.URL, err)
	}
	store, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{o.URL: remote},
		RateLimitWaitMax:  time.Second,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(o.UnknownKIDEvery), 1),
	})
	if err != nil {
		return nil, fmt.Errorf("jwks client: %w", err)
	}
	return &JWKS{store: store}, nil
}

// Key returns the public key published under kid, refusing keys meant for another algorithm or
// for encryption, and anything that is not an asymmetric public key (a JWKS "oct" key must never
// become an HMAC secret anyone who reads the JWKS knows).
func (j *JWKS) Key(ctx context.Context, kid, alg string) (any, error) {
	jwk, err := j.store.KeyRead(ctx, kid)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", kid, err)
	}
	m := jwk.Marshal()
	if m.ALG != "" && string(m.ALG) != alg {
		return nil, fmt.Errorf("key %q is for %s, token uses %s", kid, m.ALG, alg)
	}
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, fmt.Errorf("key %q is not a signing key", kid)
	}
	switch k := jwk.Key().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return k, nil
	default:
		return nil, fmt.Errorf("key %q is not a public signing key (%T)", kid, k)
	}
}
