// Package auth decides who is liking. Without configuration the writer trusts the X-User-ID header,
// which is only safe behind a gateway that sets it after authenticating the user and strips any
// copy sent by the client: the writer must never be exposed directly in that mode. With an HS256
// secret or a JWKS URL configured it requires a bearer token and takes the user from its `sub`
// claim, so that nobody can like in another user's name.
package auth
