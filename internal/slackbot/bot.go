// Package slackbot is Paddock in Slack, a transport: a project's Slack
// app takes deliveries (the Events API's, signed with the app's signing
// secret), starts a session from a mention in a
// mapped channel, steers it from its thread, and takes decisions from
// the buttons of its messages, each as the Paddock user the Slack user is
// linked to, through the engine's use cases (which check them as for any
// caller); the Relay posts what each bound session does into its thread.
// Everything posted passes the secret redaction.
package slackbot

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/paddock-dev/paddock/internal/chat"
	"github.com/paddock-dev/paddock/internal/chatdesk"
	"github.com/paddock-dev/paddock/internal/engine"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// The buttons' actions.
const (
	actionApprove     = "approve"
	actionReject      = "reject"
	actionExtend      = "extend"
	actionStart       = "start"
	actionRefuseStart = "refuse-start"
	actionAnswer      = "answer"
)

// Bot is the Slack side of every project's app.
type Bot struct {
	Desk   *chatdesk.Service
	Engine *engine.Service
	Logger *slog.Logger
	// Web is the web app's address people open, for links ("": none).
	Web string
	// APIURL is Slack's Web API (default slack.com's).
	APIURL string
	// Attempts and Backoff bound the retries of a post (default 6 and 1 s).
	Attempts int
	Backoff  time.Duration
	HTTP     *http.Client

	poster *poster
	// told is when each Slack user was last given a linking code.
	toldMu sync.Mutex
	told   map[string]time.Time
}

// codeDue says a Slack user may be given a new linking code: at most
// one a minute each, however often they write.
func (b *Bot) codeDue(project, team, user string) bool {
	b.toldMu.Lock()
	defer b.toldMu.Unlock()
	key, now := project+"/"+team+"/"+user, time.Now()
	if b.told == nil {
		b.told = map[string]time.Time{}
	}
	if now.Sub(b.told[key]) < time.Minute {
		return false
	}
	for k, t := range b.told {
		if now.Sub(t) > time.Minute {
			delete(b.told, k)
		}
	}
	b.told[key] = now
	return true
}

func (b *Bot) post() *poster {
	if b.poster == nil {
		b.poster = &poster{apiURL: b.APIURL, http: b.HTTP, attempts: b.Attempts, backoff: b.Backoff}
		if b.poster.attempts == 0 {
			b.poster.attempts = 6
		}
		if b.poster.backoff == 0 {
			b.poster.backoff = time.Second
		}
	}
	return b.poster
}

// ErrUnverified is a delivery whose signature does not hold: 401.
var ErrUnverified = fmt.Errorf("%w: Slack delivery not verified", errdefs.ErrUnauthenticated)

// noSecret verifies deliveries to a project without an app, the same
// way, so neither the answer nor its time says which projects have one:
// random, so that no delivery can be signed with it.
var noSecret = func() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// Deliver takes a delivery to project's app over the Events API: kind
// "events" (JSON) or "interactions" (a form with the payload). It is
// verified with the app's signing secret (HMAC of v0:TIMESTAMP:BODY,
// within five minutes) and refused if seen before; then handled as the
// linked user. The answer is the body to send back (nil: none). The
// same signed delivery again is a replay (401), unless Slack marks it as
// its own retry: then it is answered and nothing is done again.
func (b *Bot) Deliver(ctx context.Context, project, kind string, h http.Header, body []byte) ([]byte, error) {
	app, sec, err := b.Desk.Open(ctx, project)
	secret := sec.SigningSecret
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) {
			return nil, err
		}
		secret = noSecret
	}
	err = verify(h, body, secret)
	if err == nil && secret == noSecret {
		err = slack.ErrInvalidSignature // (no delivery is signed with it)
	}
	if err != nil {
		b.log().Warn("Slack delivery refused", "project", project, "reason", err)
		return nil, fmt.Errorf("%w: %w; sign it as Slack does (X-Slack-Signature: v0=HMAC-SHA256 of v0:TIMESTAMP:BODY with the app's signing secret, X-Slack-Request-Timestamp within 5 minutes)", ErrUnverified, err)
	}
	// What was signed, not how the signature is spelled (its hex in
	// another case verifies too), is what a replay repeats.
	sum := sha256.Sum256(append([]byte(h.Get("X-Slack-Request-Timestamp")+":"), body...))
	if seen, err := b.Desk.Seen(ctx, hex.EncodeToString(sum[:])); err != nil {
		return nil, err
	} else if seen {
		if h.Get("X-Slack-Retry-Num") != "" {
			// Slack delivering again what it sent before: it was taken,
			// and nothing is done twice.
			return nil, nil
		}
		b.log().Warn("Slack delivery refused", "project", project, "reason", "replayed")
		return nil, fmt.Errorf("%w: this signed delivery was received before (a replay)", ErrUnverified)
	}
	switch kind {
	case "events":
		return b.events(ctx, app, sec, body)
	case "interactions":
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			return nil, fmt.Errorf("%w: an interaction is a form with its payload", errdefs.ErrInvalid)
		}
		var cb slack.InteractionCallback
		if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
			return nil, fmt.Errorf("%w: interaction payload: %w", errdefs.ErrInvalid, err)
		}
		return nil, b.interaction(ctx, app, sec, cb)
	}
	return nil, fmt.Errorf("%w: Slack deliveries are events or interactions, not %q", errdefs.ErrNotFound, kind)
}

func (b *Bot) log() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

func verify(h http.Header, body []byte, secret string) error {
	v, err := slack.NewSecretsVerifier(h, secret)
	if err != nil {
		return err
	}
	if _, err := v.Write(body); err != nil {
		return err
	}
	return v.Ensure()
}

// events handles an Events API delivery.
func (b *Bot) events(ctx context.Context, app chat.App, sec chat.Secrets, body []byte) ([]byte, error) {
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		return nil, fmt.Errorf("%w: Slack event: %w", errdefs.ErrInvalid, err)
	}
	if ev.Type == slackevents.URLVerification {
		v, _ := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if v == nil {
			return nil, fmt.Errorf("%w: url_verification without its challenge", errdefs.ErrInvalid)
		}
		return json.Marshal(map[string]string{"challenge": v.Challenge})
	}
	return nil, b.callback(ctx, app, sec, ev)
}

// callback handles an event of the workspace: a mention, a message.
func (b *Bot) callback(ctx context.Context, app chat.App, sec chat.Secrets, ev slackevents.EventsAPIEvent) error {
	if ev.Type != slackevents.CallbackEvent {
		return nil
	}
	if ev.TeamID != app.Team {
		return fmt.Errorf("%w: an event of workspace %s, not the app's (%s)", ErrUnverified, ev.TeamID, app.Team)
	}
	bot := ""
	if cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent); ok && len(cb.Authorizations) > 0 {
		bot = cb.Authorizations[0].UserID
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		if e.BotID != "" || e.User == "" {
			return nil
		}
		return b.said(ctx, app, sec, said{user: e.User, channel: e.Channel, ts: e.TimeStamp, thread: e.ThreadTimeStamp, text: chat.Text(e.Text, bot), mention: true, files: e.Files})
	case *slackevents.MessageEvent:
		if e.BotID != "" || e.SubType != "" && e.SubType != "file_share" || e.User == "" || e.ThreadTimeStamp == "" || e.User == bot {
			return nil
		}
		if bot != "" && strings.Contains(e.Text, "<@"+bot+">") {
			return nil // its app_mention says it
		}
		var files []slack.File
		if e.Message != nil {
			files = e.Message.Files
		}
		return b.said(ctx, app, sec, said{user: e.User, channel: e.Channel, ts: e.TimeStamp, thread: e.ThreadTimeStamp, text: chat.Text(e.Text, bot), files: files})
	}
	return nil
}

// said is a person's message in a channel.
type said struct {
	user, channel, ts, thread, text string
	mention                         bool
	// files are those shared with it: given with the message.
	files []slack.File
}

// said handles a message: in a bound thread it steers the session; a
// mention elsewhere in a mapped channel starts one bound to its thread.
func (b *Bot) said(ctx context.Context, app chat.App, sec chat.Secrets, m said) error {
	root := m.thread
	if root == "" {
		root = m.ts
	}
	th, err := b.Desk.Threads().At(ctx, app.Team, m.channel, root)
	bound := err == nil
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	if !bound && !m.mention {
		return nil // a thread Paddock has nothing to do with
	}
	if bound && th.Project != app.Project {
		return nil
	}
	who, err := b.Desk.Who(ctx, app.Project, app.Team, m.user)
	if err != nil {
		return b.refuse(ctx, app, sec, m.channel, root, m.user, err)
	}
	if bound {
		if strings.TrimSpace(m.text) == "" && len(m.files) > 0 {
			m.text = "(files attached)"
		}
		refs, err := b.attach(ctx, sec, who, app.Project, m.files)
		if err != nil {
			return b.refuse(ctx, app, sec, m.channel, root, m.user, err)
		}
		payload, _ := json.Marshal(session.MessagePayload{Message: m.text, Attachments: refs})
		_, err = b.Engine.Sessions().Send(ctx, who, th.SessionID, wire.SendRequest{Kind: session.KindMessage, Payload: payload,
			IdempotencyKey: "slack:" + m.channel + ":" + m.ts})
		var again *errdefs.KeyConflictError
		if errors.As(err, &again) {
			return nil // Slack delivered it again: sent the first time
		}
		if err != nil {
			return b.refuse(ctx, app, sec, m.channel, root, m.user, err)
		}
		return nil
	}
	c, ok := app.Channel(m.channel)
	if !ok {
		return b.tell(ctx, sec, m.channel, root, m.user, fmt.Sprintf("This channel starts no sessions: an admin of project %s maps it to an agent "+
			"(`paddock slack configure --project %s --channel %s=AGENT@REPO …`).", app.Project, app.Project, m.channel))
	}
	if strings.TrimSpace(m.text) == "" {
		return b.tell(ctx, sec, m.channel, root, m.user, "Say what the agent should do, after the mention.")
	}
	refs, err := b.attach(ctx, sec, who, app.Project, m.files)
	if err != nil {
		return b.refuse(ctx, app, sec, m.channel, root, m.user, err)
	}
	req := wire.CreateRequest{Project: app.Project, Agent: c.Agent, Repo: c.Repo, Ref: c.Ref, Message: m.text, Attachments: refs,
		IdempotencyKey: "slack:" + m.channel + ":" + root}
	switch c.Approver {
	case chat.ApproverRequester, "":
		req.Approver = who.User
	case chat.ApproverMembers:
	default:
		req.Approver = c.Approver
	}
	x, err := b.Engine.Sessions().Create(ctx, who, req)
	if err != nil {
		return b.refuse(ctx, app, sec, m.channel, root, m.user, err)
	}
	_, err = b.Desk.Threads().Bind(ctx, chat.Thread{SessionID: x.ID, Project: app.Project, Team: app.Team, Channel: m.channel, TS: root})
	return err
}

// refuse tells a Slack user why nothing was done: how to link, or the
// reason the engine gave.
func (b *Bot) refuse(ctx context.Context, app chat.App, sec chat.Secrets, channel, thread, user string, why error) error {
	if errors.Is(why, chatdesk.ErrUnlinked) {
		if !b.codeDue(app.Project, app.Team, user) {
			return nil // told a minute ago: the code given then still holds
		}
		code, err := b.Desk.NewCode(ctx, app.Project, app.Team, user)
		if err != nil {
			return err
		}
		return b.tell(ctx, sec, channel, thread, user, linkHelp(code, b.Web))
	}
	var kind string
	switch {
	case errors.Is(why, errdefs.ErrDenied), errors.Is(why, errdefs.ErrNotFound):
		kind = "Not allowed"
	case errors.Is(why, errdefs.ErrInvalid), errors.Is(why, errdefs.ErrConflict):
		kind = "Not done"
	default:
		return why
	}
	return b.tell(ctx, sec, channel, thread, user, kind+": "+mrkdwn(why.Error()))
}

// tell shows a Slack user alone a notice, in the background: Slack being
// slow never holds a delivery's answer.
func (b *Bot) tell(ctx context.Context, sec chat.Secrets, channel, thread, user, text string) error {
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if err := b.post().tell(ctx, sec.BotToken, channel, thread, user, text); err != nil {
			b.log().Warn("Slack notice not posted", "channel", channel, "err", err)
		}
	}()
	return nil
}

// interaction handles a button: approve, reject, extend, let start,
// answer; each as the linked user, checked by the engine.
func (b *Bot) interaction(ctx context.Context, app chat.App, sec chat.Secrets, cb slack.InteractionCallback) error {
	if cb.Team.ID != app.Team {
		return fmt.Errorf("%w: an interaction of workspace %s, not the app's (%s)", ErrUnverified, cb.Team.ID, app.Team)
	}
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return nil
	}
	act := cb.ActionCallback.BlockActions[0]
	thread := cb.Message.ThreadTimestamp
	if thread == "" {
		thread = cb.Container.ThreadTs
	}
	th, err := b.Desk.Threads().At(ctx, app.Team, cb.Channel.ID, thread)
	if err == nil && th.Project != app.Project {
		err = errdefs.ErrNotFound // another project's thread: its own app decides there
	}
	if err != nil {
		return b.tell(ctx, sec, cb.Channel.ID, thread, cb.User.ID, "This message belongs to no Paddock session of this app.")
	}
	who, err := b.Desk.Who(ctx, app.Project, app.Team, cb.User.ID)
	if err == nil {
		err = b.act(ctx, who, th, act)
	}
	if err != nil {
		return b.refuse(ctx, app, sec, cb.Channel.ID, thread, cb.User.ID, err)
	}
	return nil
}

// note is what a decision taken in Slack records with it.
const decidedIn = "decided in Slack"

func (b *Bot) act(ctx context.Context, who identity.Principal, th chat.Thread, act *slack.BlockAction) error {
	action := act.ActionID
	if strings.HasPrefix(action, actionAnswer+"-") {
		action = actionAnswer // answer-Q-O: one action ID per button, as Slack wants
	}
	switch action {
	case actionApprove, actionReject:
		if _, err := b.Desk.Threads().Approval(ctx, th.SessionID, act.Value); err != nil {
			return err
		}
		_, err := b.Engine.Gates().Decide(ctx, who, act.Value, act.ActionID == actionApprove, decidedIn)
		return err
	case actionExtend:
		if _, err := b.Desk.Threads().Park(ctx, th.SessionID, act.Value); err != nil {
			return err
		}
		_, err := b.Engine.Gates().Extend(ctx, who, th.SessionID, wire.ExtendRequest{Note: decidedIn})
		return err
	case actionStart, actionRefuseStart:
		if _, err := b.Desk.Threads().Park(ctx, th.SessionID, act.Value); err != nil {
			return err
		}
		_, err := b.Engine.Gates().ApproveStart(ctx, who, th.SessionID, act.ActionID == actionStart, decidedIn)
		return err
	case actionAnswer:
		call, q, o, err := answerOf(act.Value)
		if err != nil {
			return err
		}
		question, err := b.question(ctx, th.SessionID, call)
		if err != nil {
			return err
		}
		if q < 0 || o < 0 || q >= len(question.Questions) || o >= len(question.Questions[q].Options) {
			return fmt.Errorf("%w: no such option", errdefs.ErrInvalid)
		}
		item := question.Questions[q]
		payload, _ := json.Marshal(session.AnswerPayload{ToolCallID: call, Answers: map[string]string{item.ID: item.Options[o]}})
		_, err = b.Engine.Sessions().Send(ctx, who, th.SessionID, wire.SendRequest{Kind: session.KindAnswer, Payload: payload,
			IdempotencyKey: "slack-answer:" + call + ":" + item.ID})
		return err
	}
	return fmt.Errorf("%w: unknown action %q", errdefs.ErrInvalid, act.ActionID)
}

func answerOf(v string) (call string, q, o int, err error) {
	parts := strings.Split(v, "|")
	if len(parts) == 3 {
		if q, err = strconv.Atoi(parts[1]); err == nil {
			o, err = strconv.Atoi(parts[2])
		}
		if err == nil {
			return parts[0], q, o, nil
		}
	}
	return "", 0, 0, fmt.Errorf("%w: answer %q", errdefs.ErrInvalid, v)
}

// question finds the question a call asked in a bound session.
func (b *Bot) question(ctx context.Context, sessionID, call string) (session.Question, error) {
	var after int64
	for {
		events, err := b.Desk.Threads().Events(ctx, sessionID, after, 500)
		if err != nil {
			return session.Question{}, err
		}
		for _, e := range events {
			var q session.Question
			if e.Kind == session.EventQuestion && json.Unmarshal(e.Data, &q) == nil && q.ToolCallID == call {
				return q, nil
			}
			after = e.Seq
		}
		if len(events) < 500 {
			return session.Question{}, fmt.Errorf("%w: no question of call %s", errdefs.ErrNotFound, call)
		}
	}
}
