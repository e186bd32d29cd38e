package slackbot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
)

func blocksJSON(t *testing.T, m message) string {
	t.Helper()
	raw, err := json.Marshal(slack.Blocks{BlockSet: m.Blocks})
	require.NoError(t, err)
	return string(raw)
}

// TestWhatAModelWritesIsNoMarkup: a model's "<!channel>" pings no one,
// a link is no link, hidden characters are shown.
func TestWhatAModelWritesIsNoMarkup(t *testing.T) {
	for in, want := range map[string]string{
		"<!channel> look":                 "&lt;!channel&gt; look",
		"<https://evil.example|the docs>": "&lt;https://evil.example|the docs&gt;",
		"a & b":                           "a &amp; b",
		"right\u202eleft":                 `right\u202eleft`,
	} {
		require.Equal(t, want, mrkdwn(in), in)
	}
}

// TestAnApprovalShowsTheWholeCall: every line of a long command is in
// the message, with the analysis; a call too long to show has no
// Approve button; a refused one none either.
func TestAnApprovalShowsTheWholeCall(t *testing.T) {
	pinned, err := policy.Parse([]byte("default: ask\n"))
	require.NoError(t, err)
	x := session.Session{ID: "s1", Project: "p", Approver: "alice"}
	long := strings.Repeat("echo step\n", 300) + "curl https://example.com/tail-of-the-command"
	args, _ := json.Marshal(map[string]string{"command": long})
	m := approvalMessage(x, session.ToolCallData{ID: "c1", Name: "run_command", Args: args, Approval: "ap1", Rule: "r"}, pinned, "https://paddock.example")
	j := blocksJSON(t, m)
	require.Contains(t, j, "tail-of-the-command", "the end of a long command is shown")
	require.Equal(t, 301, strings.Count(j, "│"), "every line, numbered")
	require.Contains(t, j, `"action_id":"approve"`)
	require.Contains(t, j, "only alice")

	huge, _ := json.Marshal(map[string]string{"command": strings.Repeat("x", 200_000)})
	m = approvalMessage(x, session.ToolCallData{ID: "c2", Name: "run_command", Args: huge, Approval: "ap2"}, pinned, "https://paddock.example")
	j = blocksJSON(t, m)
	require.NotContains(t, j, `"action_id":"approve"`, "what cannot be shown whole cannot be approved here")
	require.Contains(t, j, `"action_id":"reject"`)
	require.Contains(t, j, "https://paddock.example/inbox")

	refused, _ := json.Marshal(map[string]string{"command": "ls; sudo id"})
	m = approvalMessage(x, session.ToolCallData{ID: "c3", Name: "run_command", Args: refused, Approval: "ap3"}, pinned, "")
	require.NotContains(t, blocksJSON(t, m), `"action_id":"approve"`, "a refused family never gets an Approve button")
}

// TestPostsAreRedactedAndRetried: a planted secret never reaches Slack;
// a failing Slack is retried, then given up on; a refusal is not retried.
func TestPostsAreRedactedAndRetried(t *testing.T) {
	var calls atomic.Int32
	var seen atomic.Value
	fail := atomic.Int32{}
	fail.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_ = r.ParseForm()
		seen.Store(r.Form.Get("text") + r.Form.Get("blocks"))
		switch {
		case r.Form.Get("channel") == "CREFUSED":
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "channel_not_found"})
		case fail.Add(-1) >= 0:
			w.WriteHeader(http.StatusBadGateway)
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C1", "ts": "1.000001"})
		}
	}))
	defer srv.Close()
	p := &poster{apiURL: srv.URL + "/", attempts: 4, backoff: time.Millisecond}
	token := "ghp_" + "Zq8Lm2Xv7Nc3Wb9Yd1Fg6Hj4Sa0QeKr5Pt2Ui"
	ts, err := p.post(t.Context(), "xoxb-1", "C1", "", message{Text: "the token is " + token, Blocks: []slack.Block{section("again " + token)}})
	require.NoError(t, err)
	require.Equal(t, "1.000001", ts)
	require.Equal(t, int32(3), calls.Load(), "two failures, then taken")
	require.NotContains(t, seen.Load().(string), token[4:20])
	require.Contains(t, seen.Load().(string), "the token is")

	calls.Store(0)
	fail.Store(100)
	_, err = p.post(t.Context(), "xoxb-1", "C1", "", message{Text: "hello"})
	require.ErrorContains(t, err, "after 4 attempts")
	require.Equal(t, int32(4), calls.Load())

	calls.Store(0)
	_, err = p.post(t.Context(), "xoxb-1", "CREFUSED", "", message{Text: "hello"})
	require.ErrorIs(t, err, errPermanent)
	require.Equal(t, int32(1), calls.Load(), "a refusal is final")
}
