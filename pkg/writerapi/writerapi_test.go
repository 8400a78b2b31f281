package writerapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestLikeReplyIsEncodingJSON pins the appended like reply to what encoding/json writes for the
// same fields, byte for byte, so that clients see the same body as before it was hand-encoded.
func TestLikeReplyIsEncodingJSON(t *testing.T) {
	for _, give := range []LikeReply{{"42", 123, true}, {"a-b_C", 0, false}, {"p", -1, false}, {"x", 1 << 62, true}} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(give); err != nil {
			t.Fatal(err)
		}
		if got := AppendLikeReply(nil, give.PostID, give.Count, give.Liked); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("AppendLikeReply(%+v) = %q; want %q", give, got, want.Bytes())
		}
	}
}
