package likehistory

import (
	"encoding/json"
	"net/http"

	"github.com/likes/likes/pkg/writerapi"
)

// Client turns a writer's HTTP answers into Ops, so that every suite records a history the same
// way: a 200 is OK with the answer's count, any other status a Fail (a refusal, which promises
// the change was not applied), and no answer (a transport error or a timeout) Unknown, as is a
// 503 marked unconfirmed (writerapi.Unconfirmed: applied on the primary, which may keep or lose
// it).
type Client struct {
	URL  string       // the writer's base URL
	HTTP *http.Client // its Timeout should exceed the writer's request timeout, so a 503 is seen as one
}

// Change likes (kind Like) or unlikes (Unlike) post as user, naming the user in X-User-ID (a
// writer with TRUST_USER_HEADER), and returns the operation as the history has it.
func (c Client) Change(rec *Recorder, client int, kind Kind, post, user string) Op {
	op := Op{Client: client, Kind: kind, Post: post, User: user, Call: rec.Now()}
	method := http.MethodPost
	if kind == Unlike {
		method = http.MethodDelete
	}
	var reply writerapi.LikeReply
	op.Outcome = c.do(method, "/like/"+post, user, &reply)
	op.Count, op.Changed = reply.Count, reply.Liked
	return op
}

// Read reads post's count (kind Count) or its likers (Likers).
func (c Client) Read(rec *Recorder, client int, kind Kind, post string) Op {
	op := Op{Client: client, Kind: kind, Post: post, Call: rec.Now()}
	if kind == Count {
		var reply struct {
			Count int64 `json:"count"`
		}
		op.Outcome = c.do(http.MethodGet, "/count/"+post, "", &reply)
		op.Count = reply.Count
		return op
	}
	var reply writerapi.LikersPage
	op.Outcome = c.do(http.MethodGet, "/likes/"+post+"/users?limit=100", "", &reply)
	op.Users = []string{}
	for _, u := range reply.Users {
		op.Users = append(op.Users, u.UserID)
	}
	if reply.NextCursor != "" {
		op.Outcome = Unknown // more than one page: not a whole read
	}
	return op
}

// do sends one request and reads its answer into reply.
func (c Client) do(method, path, user string, reply any) Outcome {
	req, err := http.NewRequest(method, c.URL+path, nil)
	if err != nil {
		return Unknown
	}
	if user != "" {
		req.Header.Set("X-User-ID", user)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Unknown
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		var body writerapi.Unconfirmed
		if json.NewDecoder(resp.Body).Decode(&body) == nil && body.Unconfirmed {
			return Unknown
		}
	}
	if resp.StatusCode != http.StatusOK {
		return Fail
	}
	if err := json.NewDecoder(resp.Body).Decode(reply); err != nil {
		return Unknown
	}
	return OK
}
