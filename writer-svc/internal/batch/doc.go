// Package batch groups each post's concurrent likes, unlikes and reactions into as few store
// calls as it can (group commit), while every request keeps its own answer and its own deadline.
package batch
