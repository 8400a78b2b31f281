// Package slotmove moves one Redis Cluster hash slot, with every key in it, from the master that
// owns it to another master, in as few MIGRATE calls as it can.
//
// It exists because `redis-cli --cluster reshard` moves a slot's keys 10 per MIGRATE (its
// --cluster-pipeline default) and a post keeps one dedup key per liker in its slot: a viral
// post's slot holds hundreds of thousands of keys, so redis-cli takes thousands of round trips,
// and for all that time the slot is migrating. While a slot migrates, every call that names
// several of its keys and misses one (every like: its batch key is always new) is refused with
// TRYAGAIN, and the writer can only hold its likes back (bounded by their deadlines) or answer
// 503. The shorter the move, the fewer likes wait and none fail. Both movers keep a post's keys
// consistent (each MIGRATE is atomic and the slot has one owner again at the end); this one just
// moves them in batches of thousands (Options.Batch) and sets the new owner on the target first,
// as the CLUSTER SETSLOT documentation orders, so writers are served again as soon as possible.
package slotmove
