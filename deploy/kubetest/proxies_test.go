package kubetest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// sessionBurst is the writer's SESSION_RATE burst (its default, which the chart keeps): new
// sessions one client address may take at once.
const sessionBurst = 60

// stepForwardedFor: the writer believes X-Forwarded-For from the ingress controller's pods only
// (TRUSTED_PROXIES names their headless Service). A client sending a new forged X-Forwarded-For
// with every POST /session through the controller still spends its own address's session budget
// (HAProxy Ingress replaces the header with the client's address, which the writer believes from
// it): past the burst it is refused with 429. Then the same forgery sent straight to the writer's
// Service, from this node's address (10.244.0.1, private): it must be refused too. A writer that
// trusted the whole private address space, as the base did before, would believe the forged
// address there and answer 200 from a fresh bucket. It runs last: it empties this machine's
// session budget, which later steps would wait for.
func stepForwardedFor(t *testing.T, d deployment, got *figures) {
	c := ingressClient(controllerAddr(t))
	defer c.CloseIdleConnections()
	direct := &http.Client{Timeout: 10 * time.Second}
	defer direct.CloseIdleConnections()

	refusedAt := 0
	for i := 1; i <= sessionBurst+40 && refusedAt == 0; i++ {
		switch status := answered(t, c, "https://"+publicHost, fmt.Sprintf("203.0.113.%d", i)); status {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			refusedAt = i
		default:
			t.Fatalf("POST /session %d through the controller: %d; want 200 or 429", i, status)
		}
	}
	if refusedAt == 0 {
		t.Fatalf("%d sessions through the controller, each with a new forged X-Forwarded-For, none refused: "+
			"the writer believed the forged addresses (TRUSTED_PROXIES trusts more than the controller)", sessionBurst+40)
	}
	status := answered(t, direct, d.writer, "198.51.100.7")
	if status != http.StatusTooManyRequests {
		t.Errorf("POST /session to the writer's Service with a forged X-Forwarded-For, once this address's budget is spent: %d; "+
			"want 429 (a forged header from an untrusted peer is not believed)", status)
	}
	got.add(t, "forged X-Forwarded-For through the controller: session %d refused (burst %d); directly: %d",
		refusedAt, sessionBurst, status)
}

// answered posts a session request (postSession) until it is answered other than 503: the step
// follows the Redis restart, after which a writer may still be unready (out of the Services'
// endpoints: the controller answers 503) or still finding Redis (the writer answers 503). A 503
// spends no session budget.
func answered(t *testing.T, c *http.Client, base, forged string) int {
	t.Helper()
	var status int
	await(t, time.Minute, 500*time.Millisecond, "POST /session to "+base+" answered other than 503", func() error {
		var err error
		if status, err = postSession(c, base, forged); err != nil {
			return err
		}
		if status == http.StatusServiceUnavailable {
			return fmt.Errorf("%d", status)
		}
		return nil
	})
	return status
}

// postSession asks base for a new session with X-Forwarded-For set to forged, returning the status.
func postSession(c *http.Client, base, forged string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/session", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Forwarded-For", forged)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}
