package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
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
)

// Sender is who sent a command, stamped by the server, never by the client.
type Sender struct {
	Kind SenderKind `json:"kind"`
	// ID is the operator's identity, the sending session's ID, or the system
	// component's name.
	ID string `json:"id"`
}

func (s Sender) String() string { return string(s.Kind) + ":" + s.ID }

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
	// Handoff is the predecessor's note attached to a successor's kickoff.
	Handoff string `json:"handoff,omitempty"`
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
	case KindInterrupt:
		var p InterruptPayload
		return strictJSON(raw, &p)
	case KindStop:
		var p StopPayload
		if err := strictJSON(raw, &p); err != nil {
			return err
		}
		if n := len([]rune(p.Handoff)); n > MaxHandoff {
			return fmt.Errorf("payload.handoff: %d characters, at most %d", n, MaxHandoff)
		}
	default:
		var p LifecyclePayload
		return strictJSON(raw, &p)
	}
	return nil
}

func strictJSON(raw json.RawMessage, v any) error {
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
