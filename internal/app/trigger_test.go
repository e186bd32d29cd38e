package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

const triggerSecret = "a-webhook-secret-of-some-length"

// post delivers body to trigger name as GitHub would, signed with secret.
func post(t *testing.T, name, secret, event, delivery string, body []byte) (int, wire.TriggerResult) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, shared.URL+"/v1/projects/default/triggers/"+name, bytes.NewReader(body))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var res wire.TriggerResult
	_ = json.NewDecoder(resp.Body).Decode(&res)
	return resp.StatusCode, res
}

// TestTriggerSpawnsAndRefusesForgeries: a GitHub-signed push spawns a
// session whose instruction is rendered from the payload (a redelivery
// lands once); a forged signature and a trigger without a secret are 401.
func TestTriggerSpawnsAndRefusesForgeries(t *testing.T) {
	name := unique("pusher")
	spec := "triggers:\n  - name: gh-push\n    routing: spawn\n    message: \"Push to {{.payload.ref}} by {{.payload.pusher.name}}: check it\"\n" +
		"  - name: " + name + "-yearly\n    schedule: \"0 0 1 1 *\"\n    message: happy new year\n"
	applyAgent(t, name, script(t, "work.yaml"), spec) // starts the schedule's workflow
	applyAgent(t, name, script(t, "work.yaml"), spec) // unchanged: keeps it
	body := []byte(`{"ref":"refs/heads/main","before":"0000","after":"1111","pusher":{"name":"ana"}}`)
	code, _ := post(t, "gh-push", "not-the-secret-at-all!!", "push", "d-1", body)
	require.Equal(t, http.StatusUnauthorized, code, "a forged HMAC is refused")
	code, _ = post(t, "unowned", triggerSecret, "push", "d-1", body)
	require.Equal(t, http.StatusNotFound, code, "no agent declares it")
	code, _ = post(t, "no-secret", triggerSecret, "push", "d-1", body)
	require.Equal(t, http.StatusUnauthorized, code, "a trigger without a secret refuses every delivery, as a forgery (no name is given away)")

	code, res := post(t, "gh-push", triggerSecret, "push", "d-1", body)
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, "spawn", res.Routed)
	x, err := api.Sessions().Get(context.Background(), res.SessionID)
	require.NoError(t, err)
	require.Equal(t, "Push to refs/heads/main by ana: check it", x.Input)
	require.Equal(t, session.SenderTrigger, x.CreatedBy.Kind)
	_, again := post(t, "gh-push", triggerSecret, "push", "d-1", body)
	require.Equal(t, res.SessionID, again.SessionID, "a redelivery lands once")
	waitStatus(t, x.ID, session.StatusAwaiting)
}

// TestTriggerRoutesIntoTheLiveSession: a singleton agent's live session
// receives a burst of deliveries as one turn.
func TestTriggerRoutesIntoTheLiveSession(t *testing.T) {
	ctx := context.Background()
	name := unique("steered")
	applyAgent(t, name, script(t, "work.yaml"), "concurrency: 1\ntriggers:\n  - name: steer\n    message: \"{{.event}}: {{.payload.comment.body}}\"\n")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "start"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	for i, c := range []string{"first", "second", "third"} {
		code, res := post(t, "steer", triggerSecret, "issue_comment", "c-"+c, []byte(`{"action":"created","issue":{"number":7},"comment":{"body":"`+c+`"}}`))
		require.Equal(t, http.StatusAccepted, code)
		require.Equal(t, "session", res.Routed, "%d", i)
		require.Equal(t, x.ID, res.SessionID)
	}
	waitFor(t, "the burst's turn", func() (bool, error) {
		turns, err := api.Sessions().Turns(ctx, x.ID)
		return len(turns) == 2 && turns[1].Status.Settled(), err
	})
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	var last session.TextData
	for _, e := range events {
		if e.Kind == session.EventUserMessage {
			require.NoError(t, json.Unmarshal(e.Data, &last))
		}
	}
	require.Contains(t, last.Text, "3 events arrived together")
	for _, c := range []string{"first", "second", "third"} {
		require.Contains(t, last.Text, "github.issue_comment.created: "+c)
	}
	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	absorbed := 0
	for _, c := range cmds {
		if strings.HasPrefix(c.Error, "absorbed into") {
			absorbed++
		}
	}
	require.Equal(t, 3, absorbed, "each delivery is still its own command, absorbed")
}
