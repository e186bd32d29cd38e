package session

import (
	"encoding/json"
	"time"
)

// EventKind types a transcript event.
type EventKind string

// Transcript event kinds.
const (
	EventStatus        EventKind = "status"         // session status or runtime phase changed
	EventCommand       EventKind = "command"        // a command was recorded or settled
	EventTurn          EventKind = "turn"           // a turn changed status
	EventUserMessage   EventKind = "user_message"   // a message delivered into a turn
	EventAssistantText EventKind = "assistant_text" // coalesced streamed model text
	EventToolCall      EventKind = "tool_call"      // a tool call changed state
	EventQuestion      EventKind = "question"       // the agent asked a structured question
	EventAnswer        EventKind = "answer"         // an answer was delivered
	EventNotice        EventKind = "notice"         // an operator-facing note (interrupt, stop reason)
	EventPhase         EventKind = "phase"          // a provisioning phase ended, with its duration
	EventNetwork       EventKind = "network"        // a connection through the egress proxy, allowed or refused
	EventPark          EventKind = "park"           // the session parked, or its park resolved
	EventBudget        EventKind = "budget"         // consumption of the session's budget (an action, active time), or an extension
	EventOutput        EventKind = "output"         // a running command's output, as it happens (the call's result has all of it)
	// EventAssistantMessage is a model step's complete response (the
	// harness rebuilds the conversation from them).
	EventAssistantMessage EventKind = "assistant_message"
	// EventCompaction is the middle of the conversation summarized so
	// that it fits the model's context window (data: Compaction).
	EventCompaction EventKind = "compaction"
	// EventChildApproval is a call of a session this one delegated (at
	// any depth) waiting for a person's approval: the person following
	// this session is asked for it too (data: ChildApproval).
	EventChildApproval EventKind = "child_approval"
)

// ChildApproval is the data of a child_approval event: the delegated
// session, the chain of sessions that delegated it (the first first), its
// task, and its call as it waits (its approval ID among it).
type ChildApproval struct {
	Session string       `json:"session"`
	Chain   []string     `json:"chain"`
	Task    string       `json:"task"`
	Call    ToolCallData `json:"call"`
}

// Compaction is the data of a compaction event: it replaces the first
// Messages messages of the full conversation (the task among them, which
// keeps its place) by a summary. Tool-call states are untouched: only
// what the model is shown changes.
type Compaction struct {
	Summary string `json:"summary"`
	// Messages is how many leading messages the summary replaces, and
	// Assistant how many of them were the model's.
	Messages  int `json:"messages"`
	Assistant int `json:"assistant"`
	// TokensBefore and TokensAfter estimate the conversation's size.
	TokensBefore int `json:"tokensBefore"`
	TokensAfter  int `json:"tokensAfter"`
}

// Event is one entry of a session's transcript. Seq is per session, gapless
// and increasing; it is the SSE event ID. Key makes writes idempotent: a
// retried activity writing the same key adds nothing.
type Event struct {
	SessionID string          `json:"sessionId"`
	Seq       int64           `json:"seq"`
	TurnID    string          `json:"turnId,omitempty"`
	Kind      EventKind       `json:"kind"`
	Key       string          `json:"key"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Terminal reports whether this event says the session ended.
func (e Event) Terminal() bool {
	if e.Kind != EventStatus {
		return false
	}
	var d StatusData
	_ = json.Unmarshal(e.Data, &d)
	return d.Status.Terminal()
}

// StatusData is the data of a status event.
type StatusData struct {
	Status       Status       `json:"status"`
	RuntimePhase RuntimePhase `json:"runtimePhase,omitempty"`
	Error        string       `json:"error,omitempty"`
}

// TextData is the data of user_message, assistant_text and notice events.
type TextData struct {
	Text   string  `json:"text"`
	Sender *Sender `json:"sender,omitempty"`
	// Model and ReasoningEffort are those a message asked its turn for.
	Model           string `json:"model,omitempty"`
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// Attachments are the files a message gave (never their content).
	Attachments []AttachmentRef `json:"attachments,omitempty"`
}

// TurnData is the data of a turn event.
type TurnData struct {
	Status       TurnStatus   `json:"status"`
	FailureScope FailureScope `json:"failureScope,omitempty"`
	Error        string       `json:"error,omitempty"`
	// TraceID is the turn's OpenTelemetry trace (derived from its ID).
	TraceID string `json:"traceId,omitempty"`
}

// CommandData is the data of a command event.
type CommandData struct {
	ID     string       `json:"id"`
	Kind   CommandKind  `json:"kind"`
	State  CommandState `json:"state"`
	Sender Sender       `json:"sender"`
	Error  string       `json:"error,omitempty"`
}

// OutputData is the data of an output event: the next piece of a running
// command's output, whole lines unless a line is very long. Live output is
// bounded (MaxLiveOutput per call); the call's result carries all of it.
type OutputData struct {
	CallID string `json:"callId"`
	Text   string `json:"text"`
	// Cut says live output of this call stops here (its bound is reached).
	Cut bool `json:"cut,omitempty"`
}

// MaxLiveOutput bounds the live output events of one command.
const MaxLiveOutput = 256 << 10

// PhaseData is the data of a phase event: a provisioning phase that
// really happened, how long it took and what it did.
type PhaseData struct {
	Phase      RuntimePhase `json:"phase"`
	DurationMs int64        `json:"durationMs"`
	Detail     string       `json:"detail,omitempty"`
	Error      string       `json:"error,omitempty"`
}

// NetworkData is the data of a network event: one connection a sandboxed
// process made through the egress proxy, allowed or refused.
type NetworkData struct {
	// Phase is "setup" or "command"; CallID names the command's call.
	Phase   string `json:"phase"`
	CallID  string `json:"callId,omitempty"`
	Method  string `json:"method"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Addr    string `json:"addr,omitempty"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"`
	Status  int    `json:"status,omitempty"`
	// BytesUp and BytesDown are the bytes sent to and received from the
	// destination.
	BytesUp    int64 `json:"bytesUp"`
	BytesDown  int64 `json:"bytesDown"`
	DurationMs int64 `json:"durationMs"`
}

// BudgetData is the data of a budget event: what one step, call or
// compaction consumed, or an extension granted (and by whom).
type BudgetData struct {
	Actions  int   `json:"actions,omitempty"`
	ActiveMs int64 `json:"activeMs,omitempty"`
	// Tokens and SpendUSD are a delegated session's, charged to the
	// session that delegated when its work comes back (a session's own
	// are its turns' usage).
	Tokens   int64   `json:"tokens,omitempty"`
	SpendUSD float64 `json:"spendUsd,omitempty"`
	// Extension is set on a granted extension; SpendCapUSD on a raised cap.
	Extension   bool    `json:"extension,omitempty"`
	SpendCapUSD float64 `json:"spendCapUsd,omitempty"`
	By          *Sender `json:"by,omitempty"`
	Note        string  `json:"note,omitempty"`
}
