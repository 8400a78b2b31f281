// Package ratelimit limits how often one user (or one client address) may act, with a token
// bucket kept in Redis so that every writer replica enforces one shared limit: a user cannot
// multiply the allowance by being balanced onto several replicas. Local is the exception, a
// bucket kept in each replica's memory, for the limits whose check must not write to Redis.
package ratelimit
