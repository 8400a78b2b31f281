package likehistory

import "time"

// Shown is what a viewer was shown: a post's count that arrived on its stream at Recv (the
// Recorder's clock, Now when the event was read). A stream carries no answer to a request, so
// when the count was true is not known exactly; ShownOp bounds it.
type Shown struct {
	Client int // the viewer, for the visualisation: a number no client of the writer uses
	Post   string
	Count  int64
	Recv   int64
}

// ShownOp is s as a history's operation: a Count read that answered s.Count, called within before
// it arrived (never before the history began) and returned when it arrived. The check then asks
// that the count shown was the post's count at some moment of the last within: a count no order
// of the changes ever gave (a like refused, then lost, shown all the same) fails it, and so does a
// count older than within (a viewer left behind). within is the delivery bound the suite allows a
// change to take from its effect to a viewer's screen.
//
// A viewer's operations may overlap one another, unlike a client's: the check does not use
// Client beyond naming the operation in the visualisation.
func ShownOp(s Shown, within time.Duration) Op {
	return Op{Client: s.Client, Kind: Count, Post: s.Post, Outcome: OK, Count: s.Count,
		Call: max(0, s.Recv-int64(within)), End: s.Recv}
}
