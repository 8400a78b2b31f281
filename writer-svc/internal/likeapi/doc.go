// Package likeapi serves the like API over HTTP: likes, unlikes and reactions (through the batch
// package's coalescer), counts and batch reads, a post's likers and a user's likes (package
// userlikes). It checks identities and rate limits first and maps every failure to one status
// (errors.go).
package likeapi
