package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
)

// Appender is where a step writes transcript events.
type Appender interface {
	AppendEvent(ctx context.Context, e session.Event) (session.Event, error)
}

// Coalescing bounds: streamed text is written when this much has gathered
// or this long has passed, never one event per token.
const (
	flushBytes = 512
	flushEvery = 150 * time.Millisecond
)

// StopInterrupted is the stop reason of an assistant message cut off by an
// interrupt; InterruptedText is what the conversation shows of the cut.
const (
	StopInterrupted = "interrupted"
	InterruptedText = "[interrupted by the user]"
)

// StepInput identifies one model step of a turn.
type StepInput struct {
	SessionID string
	TurnID    string
	Step      int
	Request   provider.Request
	// Variant tells apart the streamed text of a fallback model's attempt.
	Variant string
	// History is the whole conversation (Full: compaction hides part of
	// it from the request), whose call IDs a new call may not reuse.
	History []provider.Message
}

// Step calls the model once, streaming coalesced text and tool-call starts
// into the transcript, and records the complete response as an
// assistant_message event. Event keys derive from the turn and step, so a
// retried deterministic step writes nothing twice. now is the clock.
func Step(ctx context.Context, p provider.Provider, out Appender, in StepInput, now func() time.Time) (provider.Response, error) {
	prefix := fmt.Sprintf("%s/step%d", in.TurnID, in.Step)
	textPrefix := prefix + in.Variant
	var buf strings.Builder
	chunk := 0
	var last time.Time
	var writeErr error
	emit := func(kind session.EventKind, key string, v any) {
		if writeErr != nil {
			return
		}
		data, _ := json.Marshal(v)
		_, writeErr = out.AppendEvent(ctx, session.Event{SessionID: in.SessionID, TurnID: in.TurnID, Kind: kind, Key: key, Data: data})
	}
	// flush writes the buffered text; unless whole, it stops where no
	// secret can be split in two (each event is redacted on its own) and
	// keeps the rest for the next event.
	flush := func(whole bool) {
		text := buf.String()
		n := len(text)
		if !whole {
			n = secret.Boundary(text)
		}
		if n == 0 {
			return
		}
		emit(session.EventAssistantText, fmt.Sprintf("%s/text%d", textPrefix, chunk), session.TextData{Text: text[:n]})
		chunk++
		buf.Reset()
		buf.WriteString(text[n:])
		last = now()
	}
	resp, err := p.Stream(ctx, in.Request, func(d provider.Delta) {
		switch d.Kind {
		case provider.DeltaText:
			if buf.Len() == 0 {
				last = now() // the window opens with the first buffered text
			}
			buf.WriteString(d.Text)
			if buf.Len() >= flushBytes || now().Sub(last) >= flushEvery {
				flush(false)
			}
		case provider.DeltaToolStart:
			flush(true)
			if badID(d.ToolCallID) {
				break // Normalize names it when the step is complete
			}
			emit(session.EventToolCall, fmt.Sprintf("call/%s/%s", d.ToolCallID, session.CallGenerating),
				session.ToolCallData{ID: d.ToolCallID, Name: d.ToolName, State: session.CallGenerating})
		}
	})
	flush(true)
	if err != nil && ctx.Err() != nil {
		// Interrupted: the conversation records what the model had said, so
		// the next step knows it was cut off.
		wctx := context.WithoutCancel(ctx)
		cut := provider.Response{Text: resp.Text + InterruptedText, StopReason: StopInterrupted}
		data, _ := json.Marshal(AssistantMessage{Step: in.Step, Response: cut})
		if _, werr := out.AppendEvent(wctx, session.Event{SessionID: in.SessionID, TurnID: in.TurnID, Kind: session.EventAssistantMessage, Key: prefix + "/message", Data: data}); werr != nil {
			return resp, fmt.Errorf("%w (and recording the interruption failed: %v)", err, werr)
		}
		return resp, err
	}
	if err != nil {
		return resp, err
	}
	if writeErr != nil {
		return resp, fmt.Errorf("write transcript: %w", writeErr)
	}
	var renamed map[string]bool
	resp.ToolCalls, renamed = Normalize(append(append([]provider.Message{}, in.History...), in.Request.Messages...), resp.ToolCalls, fmt.Sprintf("%s-s%d", in.TurnID, in.Step))
	for _, c := range resp.ToolCalls {
		if renamed[c.ID] {
			emit(session.EventToolCall, fmt.Sprintf("call/%s/%s", c.ID, session.CallGenerating),
				session.ToolCallData{ID: c.ID, Name: c.Name, State: session.CallGenerating})
		}
		emit(session.EventToolCall, fmt.Sprintf("call/%s/%s", c.ID, session.CallGenerated),
			session.ToolCallData{ID: c.ID, Name: c.Name, State: session.CallGenerated, Args: validOrString(c.Args)})
	}
	emit(session.EventAssistantMessage, prefix+"/message", AssistantMessage{Step: in.Step, Response: resp})
	if writeErr != nil {
		return resp, fmt.Errorf("write transcript: %w", writeErr)
	}
	return resp, nil
}

// Normalize makes a step's calls safe to carry: a call whose ID is empty,
// repeats one of the conversation's earlier calls or one of this step gets
// a fresh ID (prefix-N), so every call has its own record and result; and
// arguments past provider.MaxArgs are dropped (the gate refuses the call,
// telling the model why). It reports the IDs it made.
func Normalize(history []provider.Message, calls []provider.ToolCall, prefix string) ([]provider.ToolCall, map[string]bool) {
	seen := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	renamed := map[string]bool{}
	out := make([]provider.ToolCall, len(calls))
	for i, c := range calls {
		if badID(c.ID) || seen[c.ID] {
			c.ID = fmt.Sprintf("%s-%d", prefix, i)
			renamed[c.ID] = true
		}
		seen[c.ID] = true
		if len(c.Args) > provider.MaxArgs {
			c.Dropped, c.Args = len(c.Args), nil
		}
		out[i] = c
	}
	return out, renamed
}

// badID is a call ID not to keep: empty, longer than 128 bytes, or holding
// a secret (IDs go into event keys, which are never redacted).
func badID(id string) bool {
	return id == "" || len(id) > 128 || len(secret.Find(id)) > 0
}

// validOrString keeps malformed argument text visible in the transcript
// without breaking the event's JSON.
func validOrString(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) && utf8.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}
