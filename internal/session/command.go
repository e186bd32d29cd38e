package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// CommandKind names what a command asks of a session.
type CommandKind string

// Command kinds. Only the dispatch set reaches the runtime; pause, resume and
// cancel are accepted and persisted but never dispatched.
const (
	KindStart            CommandKind = "start"
	KindStartWithMessage CommandKind = "startWithMessage"
	KindMessage          CommandKind = "message"
	KindAnswer           CommandKind = "answer"
	KindInterrupt        CommandKind = "interrupt"
	KindStop             CommandKind = "stop"
	KindPause            CommandKind = "pause"
	KindResume           CommandKind = "resume"
	KindCancel           CommandKind = "cancel"
)

// Dispatched reports whether commands of this kind are delivered to the runtime.
func (k CommandKind) Dispatched() bool {
	switch k {
	case KindStart, KindStartWithMessage, KindMessage, KindAnswer, KindInterrupt, KindStop:
		return true
	}
	return false
}

// BringsWork reports whether the command injects work; such a command revives
// an archived resumable session.
func (k CommandKind) BringsWork() bool {
	return k == KindMessage || k == KindAnswer || k == KindStartWithMessage
}

// PlatformOnly reports whether only the platform may create this kind.
func (k CommandKind) PlatformOnly() bool { return k == KindStart || k == KindStartWithMessage }

// Known reports whether k is a command kind.
func (k CommandKind) Known() bool {
	return k.Dispatched() || k == KindPause || k == KindResume || k == KindCancel
}

// CommandState is where a command row is in its life.
type CommandState string

// Command states: pending → dispatching → accepted | failed | canceled.
const (
	CommandPending     CommandState = "pending"
	CommandDispatching CommandState = "dispatching"
	CommandAccepted    CommandState = "accepted"
	CommandFailed      CommandState = "failed"
	CommandCanceled    CommandState = "canceled"
)

// SenderKind types who sent a command.
type SenderKind string

// Sender kinds.
const (
	SenderOperator SenderKind = "operator"
	SenderAgent    SenderKind = "agent"
	SenderSystem   SenderKind = "system"
	// SenderTrigger is a trigger's delivery (ID: the trigger's name).
	SenderTrigger SenderKind = "trigger"
)

// Sender is who sent a command, stamped by the server, never by the client.
type Sender struct {
	Kind SenderKind `json:"kind"`
	// ID is the operator's identity, the sending session's ID, or the system
	// component's name.
	ID string `json:"id"`
	// Via is how an operator authenticated: "token:ID" (a Paddock token,
	// minted by an administrator or by a directory login); for an agent,
	// the call it acted through (ViaDelegate, ViaSpawn, then its ID).
	Via string `json:"via,omitempty"`
	// OnBehalfOf is whom an agent acts for: the requester of the session
	// that sent the command or spawned the session (its person, or the
	// trigger that started it).
	OnBehalfOf *Sender `json:"onBehalfOf,omitempty"`
}

func (s Sender) String() string {
	if s.OnBehalfOf != nil {
		return string(s.Kind) + ":" + s.ID + " for " + s.OnBehalfOf.String()
	}
	return string(s.Kind) + ":" + s.ID
}

// Requester is whom what s sent is for: s itself, or the one an agent
// acts for. A session's requester gives its credentials, chooses its
// identity, and bounds what its agent may read and start.
func (s Sender) Requester() Sender {
	if s.OnBehalfOf != nil {
		return *s.OnBehalfOf
	}
	return s
}

// Same says s and o are the same sender (how they authenticated aside).
func (s Sender) Same(o Sender) bool { return s.Kind == o.Kind && s.ID == o.ID }

// Command is a durable row that brings work into a session.
type Command struct {
	ID             string          `json:"id"`
	SessionID      string          `json:"sessionId"`
	Seq            int64           `json:"seq"`
	Kind           CommandKind     `json:"kind"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	State          CommandState    `json:"state"`
	Sender         Sender          `json:"sender"`
	IdempotencyKey string          `json:"idempotencyKey"`
	TurnID         string          `json:"turnId,omitempty"`
	Error          string          `json:"error,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
}

// MessagePayload is the payload of message and startWithMessage.
type MessagePayload struct {
	Message  string            `json:"message"`
	Model    string            `json:"model,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// ReasoningEffort is how much the model reasons on the turn this
	// message opens (one of the levels its model takes; "": the agent's).
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// Attachments are files uploaded to the session's project, named by
	// ID; the platform fills in the rest of each when the message is sent.
	Attachments []AttachmentRef `json:"attachments,omitempty"`
	// Handoff is the predecessor's note attached to a successor's kickoff.
	Handoff string `json:"handoff,omitempty"`
	// Deliveries are the trigger deliveries a message carries (one, or
	// several held and flushed together), each still shown as its own.
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Delivery is one trigger delivery: an external event for a session.
type Delivery struct {
	Trigger string `json:"trigger"`
	// Event is the event's kind (github.push, github.check_run.completed).
	Event string `json:"event"`
	// Key identifies the delivery (the sender's delivery ID).
	Key     string    `json:"key"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// CIVerdict says whether an event kind is a CI verdict: it never
// interrupts a turn, but waits until the session is idle.
func CIVerdict(event string) bool {
	switch event {
	case "github.check_run.completed", "github.check_suite.completed", "github.workflow_run.completed":
		return true
	}
	return false
}

// AnswerPayload answers a pending structured question.
type AnswerPayload struct {
	ToolCallID string            `json:"toolCallId"`
	Answers    map[string]string `json:"answers,omitempty"`
	Response   string            `json:"response,omitempty"`
}

// InterruptPayload aborts the in-flight turn.
type InterruptPayload struct {
	Reason string `json:"reason,omitempty"`
}

// StopPayload ends the session terminally.
type StopPayload struct {
	Reason  string `json:"reason,omitempty"`
	Respawn bool   `json:"respawn,omitempty"`
	Handoff string `json:"handoff,omitempty"`
}

// LifecyclePayload is the payload of pause, resume and cancel.
type LifecyclePayload struct {
	Reason string `json:"reason,omitempty"`
}

// ValidatePayload checks a command's payload strictly against its kind:
// unknown fields, wrong types and missing required fields are errors.
func ValidatePayload(kind CommandKind, raw json.RawMessage) error {
	if !kind.Known() {
		return fmt.Errorf("unknown command kind %q (want one of message, answer, interrupt, stop, pause, resume, cancel)", kind)
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	switch kind {
	case KindStart:
		var p struct{}
		return strictJSON(raw, &p)
	case KindMessage, KindStartWithMessage:
		var p MessagePayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		if strings.TrimSpace(p.Message) == "" {
			return fmt.Errorf("payload.message: required for %s", kind)
		}
		if len(p.Metadata) > 32 {
			return fmt.Errorf("payload.metadata: %d entries, at most 32", len(p.Metadata))
		}
		if len(p.Attachments) > MaxAttachments {
			return fmt.Errorf("payload.attachments: %d, at most %d per message", len(p.Attachments), MaxAttachments)
		}
		for i, a := range p.Attachments {
			if a.ID == "" {
				return fmt.Errorf("payload.attachments[%d].id: required (the ID the upload returned)", i)
			}
			if err := Limit(fmt.Sprintf("payload.attachments[%d].id", i), a.ID, MaxShort); err != nil {
				return err
			}
		}
		for k, v := range p.Metadata {
			if err := Limit("payload.metadata key", k, MaxShort); err != nil {
				return err
			}
			if err := Limit("payload.metadata."+k, v, MaxReason); err != nil {
				return err
			}
		}
		return errors.Join(Limit("payload.message", p.Message, MaxMessage), Limit("payload.model", p.Model, MaxShort), Limit("payload.reasoningEffort", p.ReasoningEffort, MaxShort),
			Limit("payload.handoff", p.Handoff, MaxHandoff))
	case KindAnswer:
		var p AnswerPayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		if p.ToolCallID == "" {
			return fmt.Errorf("payload.toolCallId: required for answer")
		}
		if len(p.Answers) == 0 && strings.TrimSpace(p.Response) == "" {
			return fmt.Errorf("payload: an answer needs answers or a response")
		}
		if len(p.Answers) > 64 {
			return fmt.Errorf("payload.answers: %d entries, at most 64", len(p.Answers))
		}
		for k, v := range p.Answers {
			if err := errors.Join(Limit("payload.answers key", k, MaxShort), Limit("payload.answers."+k, v, MaxMessage)); err != nil {
				return err
			}
		}
		return errors.Join(Limit("payload.toolCallId", p.ToolCallID, MaxShort), Limit("payload.response", p.Response, MaxMessage))
	case KindInterrupt:
		var p InterruptPayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		return Limit("payload.reason", p.Reason, MaxReason)
	case KindStop:
		var p StopPayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		return errors.Join(Limit("payload.reason", p.Reason, MaxReason), Limit("payload.handoff", p.Handoff, MaxHandoff))
	default:
		var p LifecyclePayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		return Limit("payload.reason", p.Reason, MaxReason)
	}
}

// Length limits of caller-supplied text, in characters.
const (
	MaxMessage = 100000 // a message, an answer
	MaxReason  = 2000   // a reason, a note, a metadata value
	MaxShort   = 200    // identifiers, keys, names
)

// Limit checks that a caller-supplied text field has at most max characters.
func Limit(field, v string, max int) error {
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Errorf("%s: %d characters, at most %d", field, n, max)
	}
	return nil
}

func strictJSON(raw json.RawMessage, v any) error {
	if err := CheckJSON(raw, v); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("payload: trailing data after the JSON object")
	}
	return nil
}

// MaxBatch is the most message commands combined into one turn.
const MaxBatch = 32

// NextBatch picks, from the pending commands in queue order, the commands the
// next turn delivers: a single non-message command, or up to MaxBatch
// consecutive message commands, stopping at the first non-message. Commands
// that are not dispatched (pause, resume, cancel) are skipped.
func NextBatch(pending []Command) []Command {
	var batch []Command
	for _, c := range pending {
		if !c.Kind.Dispatched() {
			continue
		}
		if c.Kind != KindMessage {
			if len(batch) == 0 {
				return []Command{c}
			}
			return batch
		}
		batch = append(batch, c)
		if len(batch) == MaxBatch {
			return batch
		}
	}
	return batch
}
