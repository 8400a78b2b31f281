package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/likes/likes/pkg/update"
	"github.com/likes/likes/testkit/poll"
)

// TestReactionsTravelInTheCountsFrame: an update with reactions reaches a viewer as one frame of
// two events, the count (with the version as its id, as every stream's id now is) and the
// reactions (no id), so that the newest frame alone is the post's whole state.
func TestReactionsTravelInTheCountsFrame(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	_, c := addViewer(t, h, false, "r")
	r := startReader(t, c)
	r.mu.Lock()
	r.keepRaw = true
	r.mu.Unlock()
	poll.Until(t, 10*time.Second, "snapshot", func() bool { ev, _, _, _ := r.snapshot(); return len(ev) == 1 })
	h.Publish(update.Update{PostID: "r", Count: 2, TS: 1_800_000_000_000_000, Reactions: `{"clap":3,"wow":1}`})
	want := "id: 1800000000000000\nevent: count\ndata: {\"post_id\":\"r\",\"count\":2,\"ts\":1800000000000000}\n\n" +
		"event: reactions\ndata: {\"post_id\":\"r\",\"counts\":{\"clap\":3,\"wow\":1},\"ts\":1800000000000000}\n\n"
	poll.Until(t, 10*time.Second, "the count and reactions frame", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.Contains(string(r.raw), want)
	})
}
