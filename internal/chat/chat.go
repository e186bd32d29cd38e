// Package chat is sessions in the chat where a team already is, pure:
// a project's Slack app (App: its workspace and the channels it starts
// sessions in; its credentials kept apart, sealed), the link between a
// Slack user and a Paddock user (made with a one-time Code the person
// confirms as themselves), and the Thread a session is bound to, with
// what the relay has posted in it (ThreadState). Package chatdesk holds
// the use cases, slackbot the Slack side.
package chat

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// App is a project's Slack app: the workspace it answers in and the
// channels mapped to the project's agents. Its bot token, signing secret
// and app-level token are sealed apart (Secrets) and never shown again.
type App struct {
	Project  string    `json:"project"`
	Team     string    `json:"team"`
	Channels []Channel `json:"channels"`
	// Socket says it has an app-level token: its deliveries come over
	// Socket Mode (no address Slack reaches is needed), as well as to the
	// Events API's request URLs.
	Socket    bool      `json:"socket,omitempty"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
}

// Channel maps a Slack channel to what a mention there starts: an agent
// of the project on a repository (a remote one through a connection, or
// a path the server may copy), and who approves its calls.
type Channel struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	Repo  string `json:"repo"`
	Ref   string `json:"ref,omitempty"`
	// Approver is who decides the session's approvals: "requester"
	// (the default: the person who asked), "members" (any member of the
	// project who may approve) or a Paddock user's name.
	Approver string `json:"approver,omitempty"`
}

// Approver values of a Channel.
const (
	ApproverRequester = "requester"
	ApproverMembers   = "members"
)

// Channel finds the mapping of channel id.
func (a App) Channel(id string) (Channel, bool) {
	for _, c := range a.Channels {
		if c.ID == id {
			return c, true
		}
	}
	return Channel{}, false
}

// ParseChannel reads a channel's mapping as an admin writes it on the
// command line: CHANNEL_ID=AGENT@REPO[#REF] (no agent: ad hoc).
func ParseChannel(s string) (Channel, error) {
	id, rest, ok := strings.Cut(s, "=")
	agent, repo, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 || repo == "" {
		return Channel{}, fmt.Errorf("--channel %q: want CHANNEL_ID=AGENT@REPO[#REF] (C0456EFGH=fixer@team/app#main)", s)
	}
	repo, ref, _ := strings.Cut(repo, "#")
	return Channel{ID: id, Agent: agent, Repo: repo, Ref: ref}, nil
}

// Secrets are an app's credentials, sealed at rest under its project.
type Secrets struct {
	BotToken      string `json:"botToken"`
	SigningSecret string `json:"signingSecret"`
	AppToken      string `json:"appToken,omitempty"`
}

// slackID says whether s is a Slack ID of a kind its first letter, one
// of kinds, says: 2 to 20 upper-case letters and digits follow.
func slackID(s, kinds string) bool {
	if len(s) < 3 || len(s) > 21 || !strings.ContainsRune(kinds, rune(s[0])) {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Check says what is wrong with an app and its secrets, for its admin.
func Check(a App, s Secrets) error {
	var problems []string
	if !slackID(a.Team, "TE") {
		problems = append(problems, fmt.Sprintf("team %q: give the workspace's ID (T… as Slack shows it in the app's settings)", clip(a.Team)))
	}
	if !strings.HasPrefix(s.BotToken, "xoxb-") {
		problems = append(problems, "bot token: give the app's Bot User OAuth Token (xoxb-…)")
	}
	if len(s.SigningSecret) < 16 {
		problems = append(problems, "signing secret: give the app's Signing Secret (Basic Information → App Credentials)")
	}
	if s.AppToken != "" && !strings.HasPrefix(s.AppToken, "xapp-") {
		problems = append(problems, "app token: Socket Mode takes an app-level token (xapp-…, Basic Information → App-Level Tokens, scope connections:write)")
	}
	if len(a.Channels) == 0 {
		problems = append(problems, "channels: map at least one channel to an agent and a repository (--channel C0123=AGENT@REPO)")
	}
	seen := map[string]bool{}
	for _, c := range a.Channels {
		switch {
		case !slackID(c.ID, "CGD"):
			problems = append(problems, fmt.Sprintf("channel %q: give the channel's ID (C…), not its name", clip(c.ID)))
		case seen[c.ID]:
			problems = append(problems, fmt.Sprintf("channel %s: mapped twice", c.ID))
		case c.Repo == "":
			problems = append(problems, fmt.Sprintf("channel %s: name the repository its sessions work on", c.ID))
		}
		seen[c.ID] = true
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Link is a Slack user known as a Paddock user through one project's
// app: the app's admins hold its signing secret, so a link made through
// it is good for it alone.
type Link struct {
	Project   string    `json:"project"`
	Team      string    `json:"team"`
	SlackUser string    `json:"slackUser"`
	User      string    `json:"user"`
	CreatedAt time.Time `json:"createdAt"`
}

// CodeTTL is how long a linking code may be confirmed.
const CodeTTL = 15 * time.Minute

// codeAlphabet leaves out the letters and digits people confuse.
const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewCode is a one-time linking code, XXXX-XXXX (40 bits), and the digest
// the store keeps of it.
func NewCode() (code, digest string) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 0, 9)
	for i, v := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[int(v)%len(codeAlphabet)])
	}
	return string(out), CodeDigest(string(out))
}

// CodeDigest is the digest of a code as a person may type it (any case,
// with or without its dash or spaces).
func CodeDigest(code string) string {
	c := strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(code)))
	sum := sha256.Sum256([]byte("paddock-chat-code:" + c))
	return hex.EncodeToString(sum[:])
}

// Thread is a Slack thread a session is bound to: its messages steer the
// session, and the relay posts what the session does into it.
type Thread struct {
	SessionID string `json:"sessionId"`
	Project   string `json:"project"`
	Team      string `json:"team"`
	Channel   string `json:"channel"`
	TS        string `json:"ts"`
	// Cursor is the last transcript event the relay has dealt with.
	Cursor int64       `json:"cursor"`
	State  ThreadState `json:"state"`
	// Done: the session ended and its last word is posted.
	Done bool `json:"done"`
}

// ThreadState is what the relay has posted in a thread: the status
// message it edits in place, and the messages asking a person for
// something (approvals, parks, questions), by what they ask for, so that
// a decision taken anywhere updates them.
type ThreadState struct {
	StatusTS   string    `json:"statusTs,omitempty"`
	StatusText string    `json:"statusText,omitempty"`
	StatusAt   time.Time `json:"statusAt,omitzero"`
	// StatusDue: the status changed since it was last edited, which the
	// rate limit held back.
	StatusDue bool `json:"statusDue,omitempty"`
	// TurnFrom is where the turn in progress began in the transcript.
	TurnFrom int64 `json:"turnFrom,omitempty"`
	// Asks are the messages asking for a decision: "approval:ID",
	// "park:ID", "question:CALL" → the message's ts.
	Asks map[string]string `json:"asks,omitempty"`
	// Calls are the approvals asked for, by the call they are for (a
	// call's later states do not name its approval).
	Calls map[string]string `json:"calls,omitempty"`
	// Children are the delegated sessions' approvals asked for here, by
	// approval (→ the call's tool): their decisions are read again until
	// taken.
	Children map[string]string `json:"children,omitempty"`
	// Dropped counts posts given up on while Slack did not answer.
	Dropped int `json:"dropped,omitempty"`
}

// StatusEvery bounds how often a thread's status message is edited.
const StatusEvery = 3 * time.Second

var (
	userMention = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<@([UW][A-Z0-9]+)(\|[^>]*)?>`) })
	link        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>`) })
	special     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<!([a-z]+)(?:\^[^|>]*)?(?:\|([^>]*))?>`) })
	channelRef  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<#([CG][A-Z0-9]+)(?:\|([^>]*))?>`) })
)

// Text is a Slack message's text as the person wrote it: the bot's own
// mention taken out, other mentions, links and channels as text, and
// Slack's three escapes undone.
func Text(raw, bot string) string {
	s := userMention().ReplaceAllStringFunc(raw, func(m string) string {
		sub := userMention().FindStringSubmatch(m)
		if sub[1] == bot {
			return ""
		}
		return "@" + sub[1]
	})
	s = link().ReplaceAllString(s, "$1")
	s = channelRef().ReplaceAllStringFunc(s, func(m string) string {
		sub := channelRef().FindStringSubmatch(m)
		if sub[2] != "" {
			return "#" + sub[2]
		}
		return "#" + sub[1]
	})
	s = special().ReplaceAllString(s, "@$1")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return strings.TrimSpace(s)
}
