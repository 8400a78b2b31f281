package clienttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Session is a signed anonymous session writer-svc issued (POST /session).
type Session struct {
	Token     string `json:"token"`
	UserID    string `json:"user_id"`
	ExpiresAt int64  `json:"expires_at"`
}

// TakeSession asks the writer at writerURL (or a balancer in front of it) for a session for a
// new anonymous user, as the page does before its first like.
func TakeSession(writerURL string) (Session, error) {
	resp, err := writerClient.Post(writerURL+"/session", "", nil)
	if err != nil {
		return Session{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return Session{}, fmt.Errorf("POST /session: %d %s", resp.StatusCode, body)
	}
	var s Session
	if err := json.Unmarshal(body, &s); err != nil {
		return Session{}, fmt.Errorf("POST /session: %q is no session: %w", body, err)
	}
	if s.Token == "" || s.UserID == "" {
		return Session{}, fmt.Errorf("POST /session: %q names no token or user", body)
	}
	return s, nil
}
