// Package auth decides who is liking. By default the writer accepts only its own session tokens
// (POST /session), so nobody who can reach it can like in another user's name. Behind a gateway
// that authenticates users, sets X-User-ID and strips any copy sent by the client, the header can
// be trusted instead (TRUST_USER_HEADER), which is never safe on an exposed writer. With an HS256
// secret or a JWKS URL configured it requires a bearer token and takes the user from its `sub`
// claim. Session tokens are accepted beside either when sessions are on. User ids that begin with
// sessiontoken.BenchUserPrefix belong to load tests, which sign them with a benchmark key: a site
// JWT or X-User-ID naming one is refused (reserved.go).
package auth
