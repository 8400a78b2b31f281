// Package userlikes reads what the store keeps about users and posts: many posts' counts and
// whether a user likes them (Reader.Read), a post's likers (Reader.Likers), and a user's likes,
// listed and erased (Index).
package userlikes
