// Package ratelimit limits how often one user may like, with the counter kept in Redis so that
// every writer replica enforces one shared limit: a user cannot multiply the allowance by being
// balanced onto several replicas.
package ratelimit
