package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/session"
)

// The sessions_* tools: an agent's view of its project's sessions, as
// its session's requester may see them (read-only), and, when policy
// allows (it asks by default), a session of another agent started or a
// message sent to a live one, for the same requester.
const (
	SessionsSummary      = "sessions_summary"
	SessionsConversation = "sessions_conversation"
	SessionsSearch       = "sessions_search"
	SessionsTools        = "sessions_tools"
	SessionsTriggers     = "sessions_triggers"
	SessionsBindings     = "sessions_bindings"
	SessionsCommands     = "sessions_commands"
	SessionsSpawn        = "sessions_spawn"
	SessionsSend         = "sessions_send"
)

// Sessions is what the sessions_* tools reach, for one calling session:
// the sessions of its project that its requester may read, and, for
// Spawn and Send, what its requester may do there. An empty ID names the
// calling session. A session the requester may not read is not found,
// worded as one that does not exist.
type Sessions interface {
	Summary(ctx context.Context, id string) (SessionSummary, error)
	Conversation(ctx context.Context, id string, after int64, limit int) ([]session.Event, error)
	Search(ctx context.Context, q SessionQuery) ([]SessionSummary, error)
	Tools(ctx context.Context, id string) ([]ToolUse, error)
	Triggers(ctx context.Context, id string) ([]TriggerUse, error)
	Bindings(ctx context.Context, id string) (Bindings, error)
	Commands(ctx context.Context, id string, limit int) ([]session.Command, error)
	// Spawn starts a session of agent with message, on behalf of the
	// calling session's requester, once for call (the calling session's
	// TURN/CALL).
	Spawn(ctx context.Context, agent, message, call string) (session.Session, error)
	// Send sends message to live session id as the calling session's
	// agent, once for call.
	Send(ctx context.Context, id, message, call string) (session.Command, error)
	// Delegate starts a session that does task d for the calling one,
	// once for call: never with more rights or budget than it has.
	Delegate(ctx context.Context, d Delegation, call string) (session.Session, error)
}

// SessionSummary is a session as another agent is shown it.
type SessionSummary struct {
	ID         string `json:"id"`
	Agent      string `json:"agent"`
	Status     string `json:"status"`
	Phase      string `json:"runtimePhase,omitempty"`
	Archived   bool   `json:"archived,omitempty"`
	Title      string `json:"title"`
	Ambient    string `json:"ambientStatus,omitempty"`
	Error      string `json:"error,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// CreatedBy is who started it ("operator:ana", "agent:ID for
	// operator:ana", "trigger:NAME").
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// The rest only in a summary of one session.
	Budget    string        `json:"budget,omitempty"`
	Parks     []ParkUse     `json:"parks,omitempty"`
	Approvals []ApprovalUse `json:"pendingApprovals,omitempty"`
}

// ParkUse is an open park: why the session waits, since when.
type ParkUse struct {
	Reason string    `json:"reason"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// ApprovalUse is a call waiting for a person's decision.
type ApprovalUse struct {
	Tool  string    `json:"tool"`
	Rule  string    `json:"rule"`
	Since time.Time `json:"since"`
}

// SessionQuery narrows a search of the project's sessions.
type SessionQuery struct {
	Text   string
	Agent  string
	Status session.Status
	Limit  int
}

// ToolUse is a tool a session may call, and what its pinned policy says
// of it (allow, ask, exclude).
type ToolUse struct {
	Name   string `json:"name"`
	Policy string `json:"policy"`
}

// TriggerUse is a trigger of a session's agent: its name, events and
// routing, and how many of its deliveries reached this session.
type TriggerUse struct {
	Name       string   `json:"name"`
	Events     []string `json:"events,omitempty"`
	Routing    string   `json:"routing"`
	Deliveries int      `json:"deliveriesToThisSession"`
}

// Bindings are the sessions a session is bound to: the one that started
// it and those it started, and the triggers whose deliveries route into
// it.
type Bindings struct {
	StartedBy string   `json:"startedBy,omitempty"`
	Started   []string `json:"started,omitempty"`
	Routed    []string `json:"routedTriggers,omitempty"`
	// PullRequests are the pull requests it is bound to (started from or
	// delivered), released ones too.
	PullRequests []session.Binding `json:"pullRequests,omitempty"`
}

// Bounds of what the sessions_* tools return.
const (
	// MaxSessionsResult bounds one result, in bytes.
	MaxSessionsResult = 48 << 10
	// MaxConversationPage is the most events one conversation page holds.
	MaxConversationPage = 200
	// MaxSearch is the most sessions one search returns.
	MaxSearch = 50
	// maxEventText bounds one event's text in a conversation page.
	maxEventText = 2000
)

// ErrNoSessions: the session's tools were not given the project's
// sessions (a process without the engine).
var ErrNoSessions = errors.New("the sessions tools are not available in this process")

var sessionsSummary = Tool{
	Name:   SessionsSummary,
	Schema: schemaOf(`"session":{"type":"string","maxLength":100}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Session string `json:"session"`
		}
		if err := decodeFor(env, raw, &a); err != nil {
			return Result{}, err
		}
		x, err := env.Sessions.Summary(ctx, a.Session)
		return jsonResult(x, err)
	},
}

var sessionsConversation = Tool{
	Name: SessionsConversation,
	Schema: schemaOf(`"session":{"type":"string","maxLength":100},"after":{"type":"integer","minimum":0},` +
		`"limit":{"type":"integer","minimum":1,"maximum":200}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Session string `json:"session"`
			After   int64  `json:"after"`
			Limit   int    `json:"limit"`
		}
		if err := decodeFor(env, raw, &a); err != nil {
			return Result{}, err
		}
		if a.After < 0 || a.Limit < 0 || a.Limit > MaxConversationPage {
			return Result{}, fmt.Errorf("%w: after is a sequence number (0 or more), limit 1 to %d", ErrArgs, MaxConversationPage)
		}
		if a.Limit == 0 {
			a.Limit = 50
		}
		events, err := env.Sessions.Conversation(ctx, a.Session, a.After, a.Limit)
		if err != nil {
			return Result{}, err
		}
		page := Page{Entries: []Entry{}}
		for _, e := range events {
			page.Next = e.Seq
			if en, ok := entryOf(e); ok {
				page.Entries = append(page.Entries, en)
			}
		}
		if len(events) < a.Limit {
			page.Next = 0 // the end
		}
		return jsonResult(page, nil)
	},
}

var sessionsSearch = Tool{
	Name: SessionsSearch,
	Schema: schemaOf(`"text":{"type":"string","maxLength":200},"agent":{"type":"string","maxLength":100},` +
		`"status":{"type":"string","enum":["queued","running","awaiting","failed","stopped"]},"limit":{"type":"integer","minimum":1,"maximum":50}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Text   string `json:"text"`
			Agent  string `json:"agent"`
			Status string `json:"status"`
			Limit  int    `json:"limit"`
		}
		if err := decodeFor(env, raw, &a); err != nil {
			return Result{}, err
		}
		st := session.Status(a.Status)
		if a.Status != "" && !st.Valid() {
			return Result{}, fmt.Errorf("%w: status %q: want queued, running, awaiting, failed or stopped", ErrArgs, clip.String(a.Status, 40))
		}
		if a.Limit < 0 || a.Limit > MaxSearch {
			return Result{}, fmt.Errorf("%w: limit 1 to %d", ErrArgs, MaxSearch)
		}
		if a.Limit == 0 {
			a.Limit = 20
		}
		found, err := env.Sessions.Search(ctx, SessionQuery{Text: a.Text, Agent: a.Agent, Status: st, Limit: a.Limit})
		if found == nil {
			found = []SessionSummary{}
		}
		return jsonResult(found, err)
	},
}

// oneSession is a read tool of one session: its argument is the session.
func oneSession[T any](name string, read func(s Sessions, ctx context.Context, id string) (T, error)) Tool {
	return Tool{
		Name:   name,
		Schema: schemaOf(`"session":{"type":"string","maxLength":100}`),
		run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
			var a struct {
				Session string `json:"session"`
			}
			if err := decodeFor(env, raw, &a); err != nil {
				return Result{}, err
			}
			v, err := read(env.Sessions, ctx, a.Session)
			return jsonResult(v, err)
		},
	}
}

var (
	sessionsTools    = oneSession(SessionsTools, Sessions.Tools)
	sessionsTriggers = oneSession(SessionsTriggers, Sessions.Triggers)
	sessionsBindings = oneSession(SessionsBindings, Sessions.Bindings)
	sessionsCommands = oneSession(SessionsCommands, func(s Sessions, ctx context.Context, id string) ([]CommandUse, error) {
		cmds, err := s.Commands(ctx, id, 100)
		out := []CommandUse{}
		for _, c := range cmds {
			out = append(out, commandOf(c))
		}
		return out, err
	})
)

var sessionsSpawn = Tool{
	Name: SessionsSpawn,
	Schema: json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string","maxLength":100},` +
		`"message":{"type":"string","maxLength":100000}},"required":["agent","message"],"additionalProperties":false}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Agent   string `json:"agent"`
			Message string `json:"message"`
		}
		if err := decodeFor(env, raw, &a); err != nil {
			return Result{}, err
		}
		if err := errors.Join(required("agent", a.Agent), required("message", a.Message)); err != nil {
			return Result{}, err
		}
		x, err := env.Sessions.Spawn(ctx, a.Agent, a.Message, env.Run)
		if err != nil {
			return Result{}, err
		}
		return jsonResult(map[string]string{"session": x.ID, "agent": x.Agent, "status": string(x.Status),
			"next": "follow it with sessions_summary or sessions_conversation; steer it with sessions_send"}, nil)
	},
}

var sessionsSend = Tool{
	Name: SessionsSend,
	Schema: json.RawMessage(`{"type":"object","properties":{"session":{"type":"string","maxLength":100},` +
		`"message":{"type":"string","maxLength":100000}},"required":["session","message"],"additionalProperties":false}`),
	run: func(ctx context.Context, env Env, raw json.RawMessage) (Result, error) {
		var a struct {
			Session string `json:"session"`
			Message string `json:"message"`
		}
		if err := decodeFor(env, raw, &a); err != nil {
			return Result{}, err
		}
		if err := errors.Join(required("session", a.Session), required("message", a.Message)); err != nil {
			return Result{}, err
		}
		c, err := env.Sessions.Send(ctx, a.Session, a.Message, env.Run)
		if err != nil {
			return Result{}, err
		}
		return jsonResult(map[string]string{"session": c.SessionID, "command": c.ID, "state": string(c.State)}, nil)
	},
}

// schemaOf is the schema of an object of optional properties.
func schemaOf(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"additionalProperties":false}`)
}

// decodeFor decodes a sessions tool's arguments, once the process has
// the sessions to show.
func decodeFor(env Env, raw json.RawMessage, v any) error {
	if env.Sessions == nil {
		return ErrNoSessions
	}
	return decode(raw, v)
}

// jsonResult is v as the model reads it, bounded.
func jsonResult(v any, err error) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return Result{}, err
	}
	if len(data) > MaxSessionsResult {
		return Result{Output: clip.String(string(data), MaxSessionsResult) +
			"\n[cut at " + clip.Bytes(MaxSessionsResult) + ": ask for fewer (limit) or a later page (after)]"}, nil
	}
	return Result{Output: string(data)}, nil
}

// Page is a page of a session's conversation: Next is the sequence
// number to pass as after for the next page (0: this is the last).
type Page struct {
	Entries []Entry `json:"entries"`
	Next    int64   `json:"next,omitempty"`
}

// Entry is one transcript event as another agent reads it: who said
// what, which tool ran with which arguments and how it ended.
type Entry struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Sender string    `json:"sender,omitempty"`
	Text   string    `json:"text,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	State  string    `json:"state,omitempty"`
	Args   string    `json:"args,omitempty"`
	Result string    `json:"result,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// entryOf is e as a conversation entry; the streaming and bookkeeping
// events (live output, budget, network, phases, whole model messages)
// are left out.
func entryOf(e session.Event) (Entry, bool) {
	en := Entry{Seq: e.Seq, At: e.CreatedAt, Kind: string(e.Kind)}
	cut := func(s string) string { return clip.String(s, maxEventText) }
	switch e.Kind {
	case session.EventUserMessage, session.EventAssistantText, session.EventNotice, session.EventAnswer:
		var d session.TextData
		_ = json.Unmarshal(e.Data, &d)
		en.Text = cut(d.Text)
		if d.Sender != nil {
			en.Sender = d.Sender.String()
		}
	case session.EventToolCall:
		var d session.ToolCallData
		_ = json.Unmarshal(e.Data, &d)
		switch d.State {
		case session.CallAwaitingApproval, session.CallCalling, session.CallDone, session.CallErrored, session.CallRejected:
		default:
			return en, false
		}
		en.Tool, en.State, en.Result, en.Error = d.Name, string(d.State), cut(d.Result), cut(d.Error)
		if len(d.Args) > 0 {
			en.Args = cut(string(d.Args))
		}
	case session.EventStatus, session.EventPark, session.EventQuestion, session.EventCompaction, session.EventTurn:
		en.Text = cut(string(e.Data))
	default:
		return en, false
	}
	return en, true
}

// CommandUse is a command as another agent reads it.
type CommandUse struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	State   string    `json:"state"`
	Sender  string    `json:"sender"`
	At      time.Time `json:"at"`
	Message string    `json:"message,omitempty"`
	Error   string    `json:"error,omitempty"`
}

func commandOf(c session.Command) CommandUse {
	out := CommandUse{ID: c.ID, Kind: string(c.Kind), State: string(c.State), Sender: c.Sender.String(), At: c.CreatedAt, Error: c.Error}
	var m session.MessagePayload
	if json.Unmarshal(c.Payload, &m) == nil {
		out.Message = clip.String(m.Message, maxEventText)
	}
	return out
}
