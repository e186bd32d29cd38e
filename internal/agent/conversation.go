// Package agent is the built-in harness: it turns a session's transcript
// into the conversation a model sees, and streams one model step back into
// the transcript. It holds no Temporal code; the engine calls it from
// activities.
package agent

import (
	"encoding/json"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// AssistantMessage is the data of an assistant_message event: the complete
// response of one model step, the record the conversation is rebuilt from.
type AssistantMessage struct {
	Step     int               `json:"step"`
	Response provider.Response `json:"response"`
}

// Conversation rebuilds the model conversation from transcript events:
// delivered messages, complete assistant responses, and the final results
// of tool calls. A tool call left without a result (interrupted, or a
// question overtaken by a new message) gets one saying so, so every call
// the model made is answered.
//
// When the conversation was compacted, the latest compaction replaces the
// messages it summarized: the task keeps its place, the summary follows
// it, then the messages after the cut as they were.
func Conversation(events []session.Event) []provider.Message {
	msgs := Full(events)
	if c := LatestCompaction(events); c != nil {
		return Compacted(*c, msgs)
	}
	return msgs
}

// Full is the conversation as if it had never been compacted.
func Full(events []session.Event) []provider.Message {
	var msgs []provider.Message
	results := map[string]provider.Message{}
	answered := map[string]bool{}
	for _, e := range events {
		if e.Kind == session.EventToolCall {
			var d session.ToolCallData
			if json.Unmarshal(e.Data, &d) == nil && d.State.Final() {
				text := d.Result
				if d.State != session.CallDone {
					text = string(d.State) + ": " + d.Error
				}
				results[d.ID] = provider.Message{Role: provider.RoleTool, ToolCallID: d.ID, Text: text, IsError: d.State != session.CallDone}
			}
		}
	}
	// pending holds the calls of the last assistant message still owed a result.
	var pending []string
	flush := func() {
		for _, id := range pending {
			if answered[id] {
				continue
			}
			answered[id] = true
			if r, ok := results[id]; ok {
				msgs = append(msgs, r)
			} else {
				msgs = append(msgs, provider.Message{Role: provider.RoleTool, ToolCallID: id, IsError: true,
					Text: "canceled: this call did not run (the turn was interrupted or the user moved on)"})
			}
		}
		pending = nil
	}
	for _, e := range events {
		switch e.Kind {
		case session.EventUserMessage:
			flush()
			var d session.TextData
			if json.Unmarshal(e.Data, &d) == nil {
				m := provider.Message{Role: provider.RoleUser, Text: d.Text}
				for _, a := range d.Attachments {
					m.Attachments = append(m.Attachments, provider.Attachment{AttachmentRef: a})
				}
				msgs = append(msgs, m)
			}
		case session.EventAssistantMessage:
			flush()
			var d AssistantMessage
			if json.Unmarshal(e.Data, &d) == nil {
				msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Text: d.Response.Text, Thinking: d.Response.Thinking, ToolCalls: d.Response.ToolCalls})
				for _, c := range d.Response.ToolCalls {
					pending = append(pending, c.ID)
				}
			}
		case session.EventToolCall:
			// Results join in call order once all calls of the step are final.
			all := len(pending) > 0
			for _, id := range pending {
				if _, ok := results[id]; !ok {
					all = false
				}
			}
			if all {
				flush()
			}
		}
	}
	// Calls of the last step still running stay open: the model is not
	// called again until they are final.
	return msgs
}

// Model is the model of a turn's steps: the one the turn's last message
// naming one asked for, else the agent's (dflt).
func Model(events []session.Event, turnID, dflt string) string {
	model := dflt
	for _, e := range events {
		var d session.TextData
		if e.Kind == session.EventUserMessage && e.TurnID == turnID && json.Unmarshal(e.Data, &d) == nil && d.Model != "" {
			model = d.Model
		}
	}
	return model
}

// Effort is the reasoning effort of a turn's model steps: the one the
// turn's last message asked for that model takes, else the agent's
// (dflt) where that model takes it, else none (a fallback model without
// the setting is called without it).
func Effort(events []session.Event, turnID, dflt, model string) string {
	effort := dflt
	for _, e := range events {
		var d session.TextData
		if e.Kind == session.EventUserMessage && e.TurnID == turnID && json.Unmarshal(e.Data, &d) == nil && d.ReasoningEffort != "" {
			effort = d.ReasoningEffort
		}
	}
	return provider.Taken(model, effort)
}
