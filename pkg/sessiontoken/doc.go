// Package sessiontoken is what every signer of the writer's anonymous session tokens shares: the
// token format (an HS256 JWT with the session audience, its key id in the header), the signing
// keys of a key file an operator keeps and rotates (FileKeys, keyfile.go), and those kept in Redis
// (Keyring), created by the first signer that needs one, rotated, and read by all. writer-svc issues and verifies tokens with them; loadgen signs its own for the users of its
// likes instead of asking the writer for a session per like (Minter): with those keys where it may
// read them in Redis, and otherwise, as a deployment whose Redis keeps the keys to the writers
// needs, with a benchmark key of its own (bench.go) that the writers accept for load-test users
// only.
//
// Both ways of writing a token live here, golang-jwt's (Sign) and the allocation-free one of the
// load generator (Minter), so that they cannot drift apart: a test holds them byte for byte equal.
package sessiontoken
