package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

const (
	secretA = "team-a-webhook-secret-0123456789"
	secretB = "team-b-webhook-secret-9876543210"
)

// deliver POSTs body to a project's trigger as GitHub does.
func (e *attackEnv) deliver(t *testing.T, project, name, secret, event, delivery, body string) (int, wire.TriggerResult, string) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	h := http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}, "X-Github-Event": {event}, "X-Github-Delivery": {delivery}}
	return e.post(t, "/v1/projects/"+project+"/triggers/"+name, h, body)
}

func (e *attackEnv) post(t *testing.T, path string, h http.Header, body string) (int, wire.TriggerResult, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	var res wire.TriggerResult
	_ = json.Unmarshal(raw, &res)
	return resp.StatusCode, res, string(raw)
}

// agentWithTrigger applies, as the server's admin, an agent of project
// declaring trigger name.
func (e *attackEnv) agentWithTrigger(t *testing.T, project, agent, trigger string) {
	t.Helper()
	code, body := e.call(t, e.admin, "POST", "/v1/agents", "application/yaml",
		fmt.Sprintf("name: %s\nproject: %s\nmodel: replay/demo\ntriggers:\n  - name: %s\n    routing: spawn\n    message: \"PR {{.payload.pull_request.title}}\"\n", agent, project, trigger))
	require.Equal(t, 200, code, body)
}

func (e *attackEnv) sessionsOf(t *testing.T, project string) []session.Session {
	t.Helper()
	list, err := e.st.ListSessions(context.Background(), session.Filter{Project: project, IncludeArchived: true})
	require.NoError(t, err)
	return list
}

const prBody = `{"action":"opened","pull_request":{"title":"private: payroll rewrite"},"number":1}`

// The attack: team-a's trigger secret, and a delivery signed with it,
// start a session in team-b, which declared a trigger of the same name.
// Triggers and their secrets now belong to a project.
func TestTriggerSecretsBelongToTheirProject(t *testing.T) {
	e := attackServer(t)
	e.project(t, "team-a")
	e.project(t, "team-b")
	e.server.TriggerSecrets = map[string]string{"team-a/gh-pr": secretA, "team-b/gh-pr": secretB}
	e.agentWithTrigger(t, "team-a", "reviewer", "gh-pr")
	e.agentWithTrigger(t, "team-b", "other", "gh-pr") // the same name, in another project: allowed, and says nothing of team-a

	// team-a's delivery, aimed at team-b: refused.
	code, _, body := e.deliver(t, "team-b", "gh-pr", secretA, "pull_request", "d-1", prBody)
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Empty(t, e.sessionsOf(t, "team-b"), "a delivery signed with team-a's secret started a session in team-b")

	// Control: the same delivery to its own project starts its session.
	code, res, body := e.deliver(t, "team-a", "gh-pr", secretA, "pull_request", "d-1", prBody)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, "spawn", res.Routed)
	x, err := e.st.GetSession(context.Background(), res.SessionID)
	require.NoError(t, err)
	require.Equal(t, "team-a", x.Project)
	require.Equal(t, "PR private: payroll rewrite", x.Input)

	// An unknown trigger and a bad signature read the same.
	c1, _, unknown := e.deliver(t, "team-a", "no-such", secretA, "pull_request", "d-2", prBody)
	c2, _, forged := e.deliver(t, "team-a", "gh-pr", "not-the-secret-at-all", "pull_request", "d-2", prBody)
	require.Equal(t, c1, c2)
	require.Equal(t, unknown, forged)

	// The old route says where triggers went.
	code, _, body = e.post(t, "/v1/triggers/gh-pr", http.Header{}, prBody)
	require.Equal(t, http.StatusGone, code, body)
	require.Contains(t, body, "/v1/projects/PROJECT/triggers/gh-pr")
}

// The attack: the same signed body, replayed under a new X-GitHub-Delivery
// or another X-GitHub-Event, started a new session each time.
func TestReplayedDeliveriesLandOnce(t *testing.T) {
	e := attackServer(t)
	e.project(t, "team-a")
	e.server.TriggerSecrets = map[string]string{"team-a/gh-pr": secretA}
	e.agentWithTrigger(t, "team-a", "reviewer", "gh-pr")

	code, first, body := e.deliver(t, "team-a", "gh-pr", secretA, "pull_request", "d-1", prBody)
	require.Equal(t, http.StatusAccepted, code, body)
	code, again, body := e.deliver(t, "team-a", "gh-pr", secretA, "pull_request", "d-2-replayed", prBody)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Equal(t, first, again, "a replay under a new delivery ID is answered as the first time")
	code, _, body = e.deliver(t, "team-a", "gh-pr", secretA, "issues", "d-3", prBody)
	require.Equal(t, http.StatusBadRequest, code, "an event kind the signed payload does not carry: %s", body)
	code, third, body := e.deliver(t, "team-a", "gh-pr", secretA, "pull_request_review_comment", "d-4", prBody)
	require.Equal(t, http.StatusBadRequest, code, "%v %s", third, body)
	require.Len(t, e.sessionsOf(t, "team-a"), 1, "the replays started sessions")

	// Control: a new body is a new delivery.
	code, other, body := e.deliver(t, "team-a", "gh-pr", secretA, "pull_request", "d-5", strings.Replace(prBody, `"number":1`, `"number":2`, 1))
	require.Equal(t, http.StatusAccepted, code, body)
	require.NotEqual(t, first.SessionID, other.SessionID)
}

// Standard Webhooks: id, timestamp and body signed together, within five
// minutes; the id keys the delivery and the payload's type is its kind.
func TestStandardWebhooks(t *testing.T) {
	e := attackServer(t)
	e.project(t, "team-a")
	e.server.TriggerSecrets = map[string]string{"team-a/gh-pr": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	e.agentWithTrigger(t, "team-a", "reviewer", "gh-pr")
	wh, err := standardwebhooks.NewWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	body := `{"type":"pull_request.opened","pull_request":{"title":"from a standard sender"}}`
	signed := func(id string, at time.Time, body string) http.Header {
		sig, err := wh.Sign(id, at, []byte(body))
		require.NoError(t, err)
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {fmt.Sprint(at.Unix())}, "Webhook-Signature": {sig}}
	}
	path := "/v1/projects/team-a/triggers/gh-pr"

	code, first, raw := e.post(t, path, signed("msg-1", time.Now(), body), body)
	require.Equal(t, http.StatusAccepted, code, raw)
	require.Equal(t, "spawn", first.Routed)
	code, again, raw := e.post(t, path, signed("msg-1", time.Now(), body), body)
	require.Equal(t, http.StatusAccepted, code, raw)
	require.Equal(t, first, again, "the same id lands once")

	code, _, raw = e.post(t, path, signed("msg-2", time.Now().Add(-10*time.Minute), body), body)
	require.Equal(t, http.StatusUnauthorized, code, raw)
	require.Contains(t, raw, "too old")
	h := signed("msg-3", time.Now(), body)
	h.Set("Webhook-Id", "msg-3-altered")
	code, _, raw = e.post(t, path, h, body)
	require.Equal(t, http.StatusUnauthorized, code, "the id is signed: %s", raw)
	require.Len(t, e.sessionsOf(t, "team-a"), 1)
}

// A delivery refused for good (here its repository, on a shared server
// without roots) is refused again when replayed, under any event kind:
// the review's attack replayed a refused body as another event.
func TestRefusedDeliveriesStayRefused(t *testing.T) {
	e := attackServer(t)
	e.project(t, "team-a")
	e.server.TriggerSecrets = map[string]string{"team-a/gh-pr": secretA}
	code, body := e.call(t, e.admin, "POST", "/v1/agents", "application/yaml",
		"name: reviewer\nproject: team-a\nmodel: replay/demo\ntriggers:\n  - name: gh-pr\n    routing: spawn\n    repo: "+t.TempDir()+"\n    message: \"PR {{.payload.pull_request.title}}\"\n")
	require.Equal(t, 200, code, body)
	review := `{"action":"submitted","review":{"body":"x"},"pull_request":{"title":"t"}}`
	code, _, body = e.deliver(t, "team-a", "gh-pr", secretA, "pull_request_review", "d-1", review)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, _, body = e.deliver(t, "team-a", "gh-pr", secretA, "pull_request", "d-2", review)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "refused before")
	require.Empty(t, e.sessionsOf(t, "team-a"))
}
