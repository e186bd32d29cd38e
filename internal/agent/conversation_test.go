package agent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

func ev(kind session.EventKind, v any) session.Event {
	b, _ := json.Marshal(v)
	return session.Event{Kind: kind, Data: b}
}

func TestConversation(t *testing.T) {
	call := func(id string) provider.ToolCall {
		return provider.ToolCall{ID: id, Name: "read_file", Args: json.RawMessage(`{}`)}
	}
	events := []session.Event{
		ev(session.EventUserMessage, session.TextData{Text: "hi"}),
		ev(session.EventAssistantMessage, AssistantMessage{Response: provider.Response{Text: "reading", ToolCalls: []provider.ToolCall{call("a"), call("b")}}}),
		ev(session.EventToolCall, session.ToolCallData{ID: "b", State: session.CallCalling}),
		ev(session.EventToolCall, session.ToolCallData{ID: "b", State: session.CallErrored, Error: "bad"}),
		ev(session.EventToolCall, session.ToolCallData{ID: "a", State: session.CallDone, Result: "content"}),
		ev(session.EventAssistantMessage, AssistantMessage{Response: provider.Response{ToolCalls: []provider.ToolCall{call("q")}}}),
		ev(session.EventUserMessage, session.TextData{Text: "never mind"}),
	}
	got := Conversation(events)
	require.Equal(t, []provider.Message{
		{Role: provider.RoleUser, Text: "hi"},
		{Role: provider.RoleAssistant, Text: "reading", ToolCalls: []provider.ToolCall{call("a"), call("b")}},
		{Role: provider.RoleTool, ToolCallID: "a", Text: "content"},
		{Role: provider.RoleTool, ToolCallID: "b", Text: "errored: bad", IsError: true},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{call("q")}},
		{Role: provider.RoleTool, ToolCallID: "q", IsError: true, Text: "canceled: this call did not run (the turn was interrupted or the user moved on)"},
		{Role: provider.RoleUser, Text: "never mind"},
	}, got)
}

func TestEffortOfATurn(t *testing.T) {
	msg := func(turn, effort string) session.Event {
		data, _ := json.Marshal(session.TextData{Text: "x", ReasoningEffort: effort})
		return session.Event{Kind: session.EventUserMessage, TurnID: turn, Data: data}
	}
	events := []session.Event{msg("t1", "high"), msg("t2", ""), msg("t3", "low"), msg("t3", "")}
	require.Equal(t, "high", Effort(events, "t1", "medium", "anthropic/claude-sonnet-4-5"))
	require.Equal(t, "medium", Effort(events, "t2", "medium", "anthropic/claude-sonnet-4-5"), "the agent's when the message names none")
	require.Equal(t, "low", Effort(events, "t3", "", "openai/o3"), "the turn's messages, the last that names one")
	require.Equal(t, "", Effort(events, "t1", "", "openai/gpt-4.1"), "a model without the setting is called without it")
}

func TestModelOfATurn(t *testing.T) {
	msg := func(turn, model string) session.Event {
		data, _ := json.Marshal(session.TextData{Text: "x", Model: model})
		return session.Event{Kind: session.EventUserMessage, TurnID: turn, Data: data}
	}
	events := []session.Event{msg("t1", "openai/o3"), msg("t2", "")}
	require.Equal(t, "openai/o3", Model(events, "t1", "openai/gpt-5"))
	require.Equal(t, "openai/gpt-5", Model(events, "t2", "openai/gpt-5"))
}
