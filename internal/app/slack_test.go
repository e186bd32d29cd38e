package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slacktest"
	"github.com/stretchr/testify/require"

	apiserver "github.com/paddock-dev/paddock/internal/api"
	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// slackMessage is a message Paddock posted (or showed one user alone).
type slackMessage struct {
	Channel, TS, Thread, User, Text, Blocks string
	Edits                                   int
}

// slackWorkspace is Slack's Web API as slacktest serves it, with the
// message methods answered and remembered: each post a ts of its own,
// chat.update replacing what a message says.
type slackWorkspace struct {
	*slacktest.Server
	mu        sync.Mutex
	n         int
	messages  []*slackMessage
	ephemeral []*slackMessage
	// socket is the Socket Mode connection open (nil: none), acks the
	// envelopes it acknowledged.
	socket *websocket.Conn
	acks   map[string]bool
	// files are the files shared in the workspace, by path; fetched the
	// bearer tokens their downloads were asked with.
	files   map[string][]byte
	fetched []string
}

func newSlackWorkspace() *slackWorkspace {
	w := &slackWorkspace{acks: map[string]bool{}, files: map[string][]byte{}}
	form := func(r *http.Request) url.Values {
		body, _ := io.ReadAll(r.Body)
		v, _ := url.ParseQuery(string(body))
		return v
	}
	w.Server = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", func(rw http.ResponseWriter, r *http.Request) {
			v := form(r)
			w.mu.Lock()
			w.n++
			m := &slackMessage{Channel: v.Get("channel"), TS: fmt.Sprintf("1700000000.%06d", w.n), Thread: v.Get("thread_ts"), Text: v.Get("text"), Blocks: v.Get("blocks")}
			w.messages = append(w.messages, m)
			w.mu.Unlock()
			_ = json.NewEncoder(rw).Encode(map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
		})
		c.Handle("/chat.update", func(rw http.ResponseWriter, r *http.Request) {
			v := form(r)
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, m := range w.messages {
				if m.Channel == v.Get("channel") && m.TS == v.Get("ts") {
					m.Text, m.Blocks, m.Edits = v.Get("text"), v.Get("blocks"), m.Edits+1
					_ = json.NewEncoder(rw).Encode(map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS})
					return
				}
			}
			_ = json.NewEncoder(rw).Encode(map[string]any{"ok": false, "error": "message_not_found"})
		})
		w.socketMode(c, socketToken)
		c.Handle("/files/", func(rw http.ResponseWriter, r *http.Request) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.fetched = append(w.fetched, r.Header.Get("Authorization"))
			data, ok := w.files[r.URL.Path]
			if !ok {
				http.NotFound(rw, r)
				return
			}
			_, _ = rw.Write(data)
		})
		c.Handle("/chat.postEphemeral", func(rw http.ResponseWriter, r *http.Request) {
			v := form(r)
			w.mu.Lock()
			w.n++
			m := &slackMessage{Channel: v.Get("channel"), TS: fmt.Sprintf("1700000000.%06d", w.n), Thread: v.Get("thread_ts"), User: v.Get("user"), Text: v.Get("text"), Blocks: v.Get("blocks")}
			w.ephemeral = append(w.ephemeral, m)
			w.mu.Unlock()
			_ = json.NewEncoder(rw).Encode(map[string]any{"ok": true, "message_ts": m.TS})
		})
	})
	w.Start()
	return w
}

// socketMode answers apps.connections.open for app token appToken with
// a Socket Mode connection the test pushes envelopes on.
func (w *slackWorkspace) socketMode(c slacktest.Customize, appToken string) {
	c.Handle("/apps.connections.open", func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+appToken {
			_ = json.NewEncoder(rw).Encode(map[string]any{"ok": false, "error": "invalid_auth"})
			return
		}
		_ = json.NewEncoder(rw).Encode(map[string]any{"ok": true, "url": "ws://" + r.Host + "/socket"})
	})
	c.Handle("/socket", func(rw http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
		conn, err := up.Upgrade(rw, r, nil)
		if err != nil {
			return
		}
		if conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A0SOCK"}}) != nil {
			return
		}
		w.mu.Lock()
		w.socket = conn
		w.mu.Unlock()
		for {
			var ack struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if conn.ReadJSON(&ack) != nil {
				return
			}
			w.mu.Lock()
			w.acks[ack.EnvelopeID] = true
			w.mu.Unlock()
		}
	})
}

var envelopeN int

// push sends an envelope over the Socket Mode connection, once there is
// one, and waits for its acknowledgement.
func (w *slackWorkspace) push(t *testing.T, kind string, payload json.RawMessage) {
	t.Helper()
	envelopeN++
	id := fmt.Sprintf("env-%d", envelopeN)
	waitFor(t, "a Socket Mode connection", func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.socket != nil, nil
	})
	w.mu.Lock()
	err := w.socket.WriteJSON(map[string]any{"envelope_id": id, "type": kind, "accepts_response_payload": false, "payload": payload})
	w.mu.Unlock()
	require.NoError(t, err)
	waitFor(t, "the envelope's acknowledgement", func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.acks[id], nil
	})
}

// find waits for a message of the thread (ephemeral: shown to user
// alone) whose text and blocks match.
func (w *slackWorkspace) find(t *testing.T, what string, ephemeral bool, match func(m slackMessage) bool) slackMessage {
	t.Helper()
	var found slackMessage
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Slack saw:\n%s", w.all())
		}
	})
	waitFor(t, what, func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.messages
		if ephemeral {
			list = w.ephemeral
		}
		for _, m := range list {
			if match(*m) {
				found = *m
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func (w *slackWorkspace) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, m := range append(append([]*slackMessage{}, w.messages...), w.ephemeral...) {
		b.WriteString(m.Text + "\n" + m.Blocks + "\n")
	}
	return b.String()
}

const (
	socketToken  = "xapp-1-A0SOCK-test"
	slackTeam    = "T0PADDOCK"
	slackChannel = "C0DEV"
	slackBot     = "U0BOT"
	slackSecret  = "8f742231b10e8888abcd99yyyzzz85a5"
)

// deliver posts a delivery signed as Slack signs it (or as told).
func deliver(t *testing.T, project, kind, contentType string, body []byte, sign func(ts string, body []byte) string) (int, string) {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest("POST", shared.URL+"/v1/projects/"+project+"/slack/"+kind, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sign(ts, body))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

func slackSign(secret string) func(ts string, body []byte) string {
	return func(ts string, body []byte) string {
		mac := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(mac, "v0:%s:%s", ts, body)
		return "v0=" + hex.EncodeToString(mac.Sum(nil))
	}
}

var eventN int

// event is an Events API callback of the workspace.
func event(inner map[string]any) []byte { return eventOf(slackTeam, inner) }

func eventOf(team string, inner map[string]any) []byte {
	eventN++
	b, _ := json.Marshal(map[string]any{"type": "event_callback", "team_id": team, "api_app_id": "A0APP", "event_id": fmt.Sprintf("Ev%d", eventN),
		"event_time": time.Now().Unix(), "authorizations": []map[string]any{{"team_id": team, "user_id": slackBot, "is_bot": true}}, "event": inner})
	return b
}

// click is a button pressed by user on message m.
func click(user string, m slackMessage, action, value string) []byte {
	return clickIn(slackTeam, user, m, action, value)
}

func clickIn(team, user string, m slackMessage, action, value string) []byte {
	eventN++
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "team": map[string]any{"id": team}, "user": map[string]any{"id": user},
		"channel": map[string]any{"id": m.Channel}, "container": map[string]any{"type": "message", "message_ts": m.TS, "thread_ts": m.Thread},
		"message": map[string]any{"ts": m.TS, "thread_ts": m.Thread}, "actions": []map[string]any{{"block_id": "b", "action_id": action, "value": value, "type": "button", "action_ts": fmt.Sprintf("1700000000.%06d", eventN)}}})
	return []byte(url.Values{"payload": {string(payload)}}.Encode())
}

var linkCode = regexp.MustCompile(`paddock slack link ([A-Z0-9]{4}-[A-Z0-9]{4})`)

// TestSlackThreadDrivesASession: a mention by an unlinked person starts
// nothing and tells them how to link; once linked, a mention in a mapped
// channel starts a session bound to its thread; its approval's Approve
// button is refused to another member and to an unlinked person, and
// approves for the named approver (attributed to Slack in the audit
// log); a reply steers it; a decision taken in the web app edits the
// message; everything posted is redacted; forged and replayed deliveries
// are 401.
func TestSlackThreadDrivesASession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	const project = "chatops"
	member(t, project, "alice", identity.Member)
	member(t, project, "bob", identity.Member)
	member(t, project, "carol", identity.Member)
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: ask\ncommands:\n  allow: [ls]\n"))
	require.NoError(t, err)
	model := scriptText(t, "slack.yaml", `steps:
  - text: "Looking. The deploy token is `+plantedGitHub+`."
    toolCalls:
      - {name: run_command, args: {command: "echo one > one.txt"}}
  - text: "First part done."
  - text: "Second part."
    toolCalls:
      - {name: run_command, args: {command: "echo two > two.txt"}}
  - text: "Second part done."
`)
	res, err := api.Projects().Apply(ctx, []byte("name: chatter\nproject: "+project+"\nmodel: "+model+"\n"))
	require.NoError(t, err)
	require.Len(t, res, 1)
	repo := gitRepo(t)

	// An admin configures the app; its credentials never come back.
	_, err = api.Projects().SetSlackApp(ctx, project, wire.SlackAppRequest{Team: slackTeam, BotToken: "xoxb-test-token", SigningSecret: slackSecret,
		Channels: []chat.Channel{{ID: "not-an-id", Repo: repo}}})
	require.Equal(t, http.StatusBadRequest, apiStatus(t, err), "a channel is named by its ID: %v", err)
	app, err := api.Projects().SetSlackApp(ctx, project, wire.SlackAppRequest{Team: slackTeam, BotToken: "xoxb-test-token", SigningSecret: slackSecret,
		Channels: []chat.Channel{{ID: slackChannel, Agent: "chatter", Repo: repo, Approver: "alice"}}})
	require.NoError(t, err)
	raw, _ := json.Marshal(app)
	require.NotContains(t, string(raw), "xoxb-test-token")
	require.NotContains(t, string(raw), slackSecret)

	signed := slackSign(slackSecret)
	mention := func(user, ts, thread, text string) {
		t.Helper()
		ev := map[string]any{"type": "app_mention", "user": user, "text": "<@" + slackBot + "> " + text, "ts": ts, "channel": slackChannel, "event_ts": ts}
		if thread != "" {
			ev["thread_ts"] = thread
		}
		code, body := deliver(t, project, "events", "application/json", event(ev), signed)
		require.Equal(t, http.StatusOK, code, body)
	}
	// Linking: a person unknown to Paddock is told how, and nothing starts.
	link := func(slackUser, user, ts string) {
		t.Helper()
		mention(slackUser, ts, "", "hello")
		m := ws.find(t, "the linking notice for "+user, true, func(m slackMessage) bool { return m.User == slackUser && linkCode.MatchString(m.Text) })
		code := linkCode.FindStringSubmatch(m.Text)[1]
		_, as := tokenOf(t, user)
		switch user {
		case "tester":
			// As a person types it, with the command line.
			status, out := paddock(t, "slack", "link", strings.ToLower(code))
			require.Equal(t, 0, status, out)
			require.Contains(t, out, "Slack user "+slackUser+" of workspace "+slackTeam+" is linked to you (tester) for project "+project+"'s app")
		case "bob":
			// In the web app.
			secret, _ := tokenOf(t, user)
			where := webForm(t, secret, "/admin", "/admin/slack/link", url.Values{"code": {code}})
			require.Contains(t, where, "linked+to+you")
			links, err := as.Access().SlackLinks(ctx)
			require.NoError(t, err)
			require.Len(t, links, 1)
		default:
			l, err := as.Access().LinkSlack(ctx, code)
			require.NoError(t, err)
			require.Equal(t, chat.Link{Project: project, Team: slackTeam, SlackUser: slackUser, User: user}, chat.Link{Project: l.Project, Team: l.Team, SlackUser: l.SlackUser, User: l.User})
		}
		_, err = as.Access().LinkSlack(ctx, code)
		require.Equal(t, http.StatusNotFound, apiStatus(t, err), "a code links once: %v", err)
	}
	link("U0TESTER", "tester", "1699999990.000100")
	link("U0ALICE", "alice", "1699999990.000200")
	link("U0BOB", "bob", "1699999990.000300")
	before, err := api.Sessions().List(ctx, session.Filter{Project: project})
	require.NoError(t, err)
	require.Empty(t, before, "no unlinked mention started a session")

	// A mention starts a session bound to its thread.
	const root = "1699999991.000100"
	mention("U0TESTER", root, "", "please fix the *notes* &amp; more")
	var x session.Session
	waitFor(t, "the session", func() (bool, error) {
		list, err := api.Sessions().List(ctx, session.Filter{Project: project})
		if len(list) == 1 {
			x = list[0]
		}
		return len(list) == 1, err
	})
	require.Equal(t, "operator:tester", x.CreatedBy.String())
	require.Equal(t, "slack:"+slackTeam+"/U0TESTER", x.CreatedBy.Via)
	require.Equal(t, "alice", x.Approver)
	require.Equal(t, "please fix the *notes* & more", x.Input)
	ws.find(t, "the status message", false, func(m slackMessage) bool { return m.Thread == root && strings.Contains(m.Blocks, x.ID) })

	// The approval, the command shown whole, with its buttons.
	ask := ws.find(t, "the approval message", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, `"action_id":"approve"`) && strings.Contains(m.Blocks, "echo one")
	})
	pending, err := api.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	apID := pending[0].ID
	require.Contains(t, ask.Blocks, apID)

	press := func(user string, m slackMessage, action, value string) {
		t.Helper()
		code, body := deliver(t, project, "interactions", "application/x-www-form-urlencoded", click(user, m, action, value), signed)
		require.Equal(t, http.StatusOK, code, body)
	}
	press("U0BOB", ask, "approve", apID)
	ws.find(t, "bob told he may not", true, func(m slackMessage) bool {
		return m.User == "U0BOB" && strings.Contains(m.Text, "Not allowed") && strings.Contains(m.Text, "names alice as its approver")
	})
	press("U0CAROL", ask, "approve", apID)
	ws.find(t, "carol told to link first", true, func(m slackMessage) bool { return m.User == "U0CAROL" && linkCode.MatchString(m.Text) })
	ap := approvalOf(t, apID)
	require.Equal(t, session.ApprovalPending, ap.Status, "neither decided")

	press("U0ALICE", ask, "approve", apID)
	ws.find(t, "the approval message edited", false, func(m slackMessage) bool {
		return m.TS == ask.TS && strings.Contains(m.Text, "Approved by alice in Slack") && !strings.Contains(m.Blocks, `"action_id":"approve"`)
	})
	ap = approvalOf(t, apID)
	require.Equal(t, "alice", ap.DecidedBy.ID)
	require.Equal(t, "slack:"+slackTeam+"/U0ALICE", ap.DecidedBy.Via)
	entries, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	attributed := false
	for _, e := range entries {
		attributed = attributed || (e.Identity == "human:alice" && e.Meta["authenticatedBy"] == "slack:"+slackTeam+"/U0ALICE")
	}
	require.True(t, attributed, "the audit log says alice decided, in Slack")

	turn := ws.find(t, "the turn's message", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, "First part done.") && strings.Contains(m.Blocks, "(exit status 0)")
	})
	require.NotContains(t, turn.Blocks, plantedGitHub[4:20])

	// A reply in the thread steers it, as the linked user.
	code, body := deliver(t, project, "events", "application/json", event(map[string]any{"type": "message", "user": "U0TESTER", "text": "now the second part",
		"ts": "1699999992.000100", "thread_ts": root, "channel": slackChannel, "event_ts": "1699999992.000100"}), signed)
	require.Equal(t, http.StatusOK, code, body)
	waitFor(t, "the reply as a message command", func() (bool, error) {
		cmds, err := api.Sessions().Commands(ctx, x.ID)
		for _, c := range cmds {
			if c.Kind == session.KindMessage && strings.Contains(string(c.Payload), "now the second part") {
				require.Equal(t, session.Sender{Kind: session.SenderOperator, ID: "tester", Via: "slack:" + slackTeam + "/U0TESTER"}, c.Sender)
				return true, err
			}
		}
		return false, err
	})
	// An unlinked person's reply steers nothing, and they are told.
	code, body = deliver(t, project, "events", "application/json", event(map[string]any{"type": "message", "user": "U0CAROL", "text": "stop it",
		"ts": "1699999992.000200", "thread_ts": root, "channel": slackChannel, "event_ts": "1699999992.000200"}), signed)
	require.Equal(t, http.StatusOK, code, body)

	// The second call, decided in the web app: the message says so.
	ask2 := ws.find(t, "the second approval message", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, `"action_id":"approve"`) && strings.Contains(m.Blocks, "echo two")
	})
	pending, err = api.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
	require.NoError(t, err)
	require.Len(t, pending, 1)
	aliceToken, _ := tokenOf(t, "alice")
	webForm(t, aliceToken, "/inbox", "/approvals/"+pending[0].ID, url.Values{"decision": {"approve"}})
	ws.find(t, "the second approval message edited", false, func(m slackMessage) bool {
		return m.TS == ask2.TS && strings.Contains(m.Text, "Approved by alice") && !strings.Contains(m.Text, "in Slack")
	})
	ws.find(t, "the second turn's message", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, "Second part done.")
	})
	cmds, err := api.Sessions().Commands(ctx, x.ID)
	require.NoError(t, err)
	for _, c := range cmds {
		require.NotContains(t, string(c.Payload), "stop it", "an unlinked person's reply is no command")
	}

	// Forged, stale and replayed deliveries are 401.
	body1 := event(map[string]any{"type": "app_mention", "user": "U0TESTER", "text": "<@" + slackBot + "> forged", "ts": "1699999993.000100", "channel": slackChannel})
	code, _ = deliver(t, project, "events", "application/json", body1, slackSign("not-the-secret-at-all"))
	require.Equal(t, http.StatusUnauthorized, code, "a forged signature")
	code, _ = deliver(t, project, "events", "application/json", body1, func(_ string, b []byte) string {
		return slackSign(slackSecret)(strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10), b)
	})
	require.Equal(t, http.StatusUnauthorized, code, "a signature of another time")
	replay := func() int {
		req, _ := http.NewRequest("POST", shared.URL+"/v1/projects/"+project+"/slack/events", bytes.NewReader(body1))
		req.Header.Set("Content-Type", "application/json")
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", signed(ts, body1))
		r1, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		r1.Body.Close()
		req2, _ := http.NewRequest("POST", req.URL.String(), bytes.NewReader(body1))
		req2.Header = req.Header.Clone()
		r2, err := http.DefaultClient.Do(req2)
		require.NoError(t, err)
		r2.Body.Close()
		require.Equal(t, http.StatusOK, r1.StatusCode)
		req3, _ := http.NewRequest("POST", req.URL.String(), bytes.NewReader(body1))
		req3.Header = req.Header.Clone()
		req3.Header.Set("X-Slack-Retry-Num", "1")
		r3, err := http.DefaultClient.Do(req3)
		require.NoError(t, err)
		r3.Body.Close()
		require.Equal(t, http.StatusOK, r3.StatusCode, "Slack's own retry is answered, and does nothing again")
		return r2.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, replay(), "the same signed delivery twice")
	code, _ = deliver(t, "no-such-project", "events", "application/json", body1, signed)
	require.Equal(t, http.StatusUnauthorized, code, "a project without an app")

	require.NotContains(t, ws.all(), plantedGitHub[4:20], "no planted secret reached Slack")
	require.NotContains(t, ws.all(), slackSecret)
}

// webForm sends a form of the web app as a person does: the page it is
// on (for its token), then the form; it answers 303.
func webForm(t *testing.T, token, page, action string, form url.Values) string {
	t.Helper()
	status, body, where := webPost(t, token, page, action, form)
	require.Equal(t, http.StatusSeeOther, status, body)
	return where
}

// webPost sends a form as webForm does and gives the answer's status,
// body and Location.
func webPost(t *testing.T, token, page, action string, form url.Values) (int, string, string) {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(webPage(t, token, page))
	require.NotNil(t, m, "the page carries its form's token")
	form.Set("csrf", m[1])
	post, err := http.NewRequest("POST", shared.URL+action, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.AddCookie(&http.Cookie{Name: apiserver.TokenCookie, Value: token})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(post)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(body), res.Header.Get("Location")
}

// webPage is a page of the web app as the holder of token sees it.
func webPage(t *testing.T, token, page string) string {
	t.Helper()
	get, err := http.NewRequest("GET", shared.URL+page, nil)
	require.NoError(t, err)
	get.AddCookie(&http.Cookie{Name: apiserver.TokenCookie, Value: token})
	res, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	return string(body)
}

func approvalOf(t *testing.T, id string) session.Approval {
	t.Helper()
	all, err := api.Gates().Approvals(context.Background(), session.ApprovalFilter{})
	require.NoError(t, err)
	for _, a := range all {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("no approval %s", id)
	return session.Approval{}
}

// TestSlackOverSocketMode: an app given an app-level token takes its
// deliveries over Socket Mode (no address Slack reaches): a mention
// there starts a session as the linked user, and a button decides its
// approval, each acknowledged.
func TestSlackOverSocketMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ctx := context.Background()
	const project, team, channel = "chatsock", "T0SOCKET", "C0SOCK"
	member(t, project, "tester", identity.Admin)
	_, err := api.Projects().SetPolicy(ctx, project, []byte("default: ask\ncommands:\n  allow: [ls]\n"))
	require.NoError(t, err)
	model := scriptText(t, "socket.yaml", `steps:
  - text: "Trying."
    toolCalls:
      - {name: run_command, args: {command: "echo sock > sock.txt"}}
  - text: "Socket done."
`)
	_, err = api.Projects().Apply(ctx, []byte("name: sock\nproject: "+project+"\nmodel: "+model+"\n"))
	require.NoError(t, err)
	app, err := api.Projects().SetSlackApp(ctx, project, wire.SlackAppRequest{Team: team, BotToken: "xoxb-sock", SigningSecret: slackSecret, AppToken: socketToken,
		Channels: []chat.Channel{{ID: channel, Agent: "sock", Repo: gitRepo(t)}}})
	require.NoError(t, err)
	require.True(t, app.Socket)
	mention := func(ts string) {
		t.Helper()
		ws.push(t, "events_api", eventOf(team, map[string]any{"type": "app_mention", "user": "U0SOCKER", "text": "<@" + slackBot + "> run it", "ts": ts, "channel": channel}))
	}
	mention("1699999995.000100")
	m := ws.find(t, "the linking notice", true, func(m slackMessage) bool {
		return m.User == "U0SOCKER" && m.Channel == channel && linkCode.MatchString(m.Text)
	})
	status, out := paddock(t, "slack", "link", linkCode.FindStringSubmatch(m.Text)[1])
	require.Equal(t, 0, status, out)

	const root = "1699999995.000200"
	mention(root)
	ask := ws.find(t, "the approval message", false, func(m slackMessage) bool {
		return m.Channel == channel && m.Thread == root && strings.Contains(m.Blocks, `"action_id":"reject"`) && strings.Contains(m.Blocks, "echo sock")
	})
	var value string
	if mm := regexp.MustCompile(`"action_id":"reject","value":"([^"]+)"`).FindStringSubmatch(ask.Blocks); mm != nil {
		value = mm[1]
	}
	require.NotEmpty(t, value)
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "team": map[string]any{"id": team}, "user": map[string]any{"id": "U0SOCKER"},
		"channel": map[string]any{"id": channel}, "container": map[string]any{"type": "message", "message_ts": ask.TS, "thread_ts": root},
		"message": map[string]any{"ts": ask.TS, "thread_ts": root}, "actions": []map[string]any{{"block_id": "b", "action_id": "reject", "value": value, "type": "button"}}})
	ws.push(t, "interactive", payload)
	ws.find(t, "the approval message edited", false, func(m slackMessage) bool {
		return m.TS == ask.TS && strings.Contains(m.Text, "Rejected by tester in Slack")
	})
}

// TestSlackAsksADelegatedSessionsCall: a call of a session the bound one
// delegated is asked in the thread too, named as such; its Approve
// button decides it, and the message says so once decided.
func TestSlackAsksADelegatedSessionsCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sessions")
	}
	ctx := context.Background()
	const project, team, channel = "chatdeleg", "T0DELEG", "C0DELEG"
	member(t, project, "tester", identity.Admin)
	child := scriptText(t, unique("slack-child")+".yaml", `steps:
  - toolCalls:
      - name: write_file
        args: {path: child.txt, content: "written by the child\n"}
  - text: "Wrote child.txt."
`)
	name := unique("slack-delegator")
	_, err := api.Projects().Apply(ctx, []byte("name: "+name+"\nproject: "+project+"\nmodel: "+scriptText(t, name+".yaml", `steps:
  - toolCalls:
      - name: delegate
        args: {task: "write child.txt", model: `+child+`}
  - text: "The child reported."
`)+"\npolicy:\n  default: allow\n  tools:\n    write_file: ask\n"))
	require.NoError(t, err)
	_, err = api.Projects().SetSlackApp(ctx, project, wire.SlackAppRequest{Team: team, BotToken: "xoxb-deleg", SigningSecret: slackSecret,
		Channels: []chat.Channel{{ID: channel, Agent: name, Repo: gitRepo(t)}}})
	require.NoError(t, err)
	signed := slackSign(slackSecret)
	mention := func(ts string) {
		t.Helper()
		code, body := deliver(t, project, "events", "application/json", eventOf(team, map[string]any{"type": "app_mention", "user": "U0DELEG",
			"text": "<@" + slackBot + "> get it written", "ts": ts, "channel": channel}), signed)
		require.Equal(t, http.StatusOK, code, body)
	}
	mention("1699999996.000100")
	m := ws.find(t, "the linking notice", true, func(m slackMessage) bool { return m.User == "U0DELEG" && linkCode.MatchString(m.Text) })
	status, out := paddock(t, "slack", "link", linkCode.FindStringSubmatch(m.Text)[1])
	require.Equal(t, 0, status, out)

	const root = "1699999996.000200"
	mention(root)
	ask := ws.find(t, "the delegated call's approval", false, func(m slackMessage) bool {
		return m.Channel == channel && m.Thread == root && strings.Contains(m.Blocks, "A session this one delegated") && strings.Contains(m.Blocks, `"action_id":"approve"`)
	})
	require.Contains(t, ask.Blocks, "child.txt")
	value := regexp.MustCompile(`"action_id":"approve","value":"([^"]+)"`).FindStringSubmatch(ask.Blocks)
	require.NotNil(t, value)
	// Another project's app in the same workspace decides nothing here,
	// whoever its admins sign as.
	member(t, project+"-other", "tester", identity.Admin)
	_, err = api.Projects().SetSlackApp(ctx, project+"-other", wire.SlackAppRequest{Team: team, BotToken: "xoxb-other", SigningSecret: "another-signing-secret-0123",
		Channels: []chat.Channel{{ID: channel, Repo: gitRepo(t)}}})
	require.NoError(t, err)
	code, body := deliver(t, project+"-other", "interactions", "application/x-www-form-urlencoded", clickIn(team, "U0DELEG", ask, "approve", value[1]),
		slackSign("another-signing-secret-0123"))
	require.Equal(t, http.StatusOK, code, body)
	ws.find(t, "the other app's refusal", true, func(m slackMessage) bool {
		return m.User == "U0DELEG" && strings.Contains(m.Text, "belongs to no Paddock session of this app")
	})
	require.Equal(t, session.ApprovalPending, approvalOf(t, value[1]).Status)

	code, body = deliver(t, project, "interactions", "application/x-www-form-urlencoded", clickIn(team, "U0DELEG", ask, "approve", value[1]), signed)
	require.Equal(t, http.StatusOK, code, body)
	ws.find(t, "the delegated call's message edited", false, func(m slackMessage) bool {
		return m.TS == ask.TS && strings.Contains(m.Text, "Approved by tester in Slack")
	})
	ws.find(t, "the parent's turn", false, func(m slackMessage) bool {
		return m.Thread == root && strings.Contains(m.Blocks, "The child reported.")
	})
}
