package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, "testdata", func(base string) provider.Provider {
		p, err := Factory(func(k string) string {
			return map[string]string{"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": base}[k]
		})("claude-test")
		require.NoError(t, err)
		return p
	})
}

func TestMissingKeyIsAClearError(t *testing.T) {
	_, err := Factory(func(string) string { return "" })("claude-test")
	require.ErrorContains(t, err, "ANTHROPIC_API_KEY is not set")
}

// TestReasoningEffortIsExtendedThinking: an effort becomes the thinking
// budget on top of the answer's tokens; the thinking streamed back (with
// its signature) is in the response, and given back unchanged with its
// message in the next call.
func TestReasoningEffortIsExtendedThinking(t *testing.T) {
	thinking := strings.Join([]string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me weigh it."}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmVk"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Weighed."}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":40}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}, "\n\n") + "\n\n"
	srv := providertest.NewServer(t, "", providertest.Reply{SSE: thinking}, providertest.Reply{SSE: providertest.AnthropicStream("Again.")})
	p, err := Factory(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": srv.URL}[k]
	})("claude-sonnet-4-5")
	require.NoError(t, err)
	ask := provider.Message{Role: provider.RoleUser, Text: "weigh it"}
	resp, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{ask}, ReasoningEffort: provider.EffortHigh}, func(provider.Delta) {})
	require.NoError(t, err)
	require.Equal(t, "Weighed.", resp.Text)
	require.Equal(t, []provider.Thinking{{Text: "Let me weigh it.", Signature: "c2lnbmVk", Model: "claude-sonnet-4-5"}}, resp.Thinking)
	first := srv.Requests[0]
	require.Equal(t, map[string]any{"type": "enabled", "budget_tokens": float64(ThinkingBudget[provider.EffortHigh])}, first["thinking"])
	require.Equal(t, float64(maxOutput), first["max_tokens"], "within what every model answers")

	back := provider.Message{Role: provider.RoleAssistant, Text: resp.Text, Thinking: resp.Thinking}
	_, err = p.Stream(t.Context(), provider.Request{Messages: []provider.Message{ask, back, {Role: provider.RoleUser, Text: "again"}}, ReasoningEffort: provider.EffortLow}, func(provider.Delta) {})
	require.NoError(t, err)
	second, _ := json.Marshal(srv.Requests[1]["messages"])
	require.Contains(t, string(second), `{"signature":"c2lnbmVk","thinking":"Let me weigh it.","type":"thinking"}`)
	require.Equal(t, map[string]any{"type": "enabled", "budget_tokens": float64(ThinkingBudget[provider.EffortLow])}, srv.Requests[1]["thinking"])

	_, err = p.Stream(t.Context(), provider.Request{Messages: []provider.Message{ask}, ReasoningEffort: "extreme"}, func(provider.Delta) {})
	require.ErrorContains(t, err, `reasoning effort "extreme"`)
}

// TestThinkingIsGivenBackOnlyWhereItHolds: a tool loop whose model
// message has no thinking it can be given back (none, another model's,
// or one the store redacted) continues with thinking off, as the API
// requires; max_tokens stays within what every model answers.
func TestThinkingIsGivenBackOnlyWhereItHolds(t *testing.T) {
	replies := make([]providertest.Reply, 4)
	for i := range replies {
		replies[i] = providertest.Reply{SSE: providertest.AnthropicStream("ok")}
	}
	srv := providertest.NewServer(t, "", replies...)
	p, err := Factory(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": srv.URL}[k]
	})("claude-opus-4-1")
	require.NoError(t, err)
	loop := func(th ...provider.Thinking) []provider.Message {
		return []provider.Message{{Role: provider.RoleUser, Text: "go"},
			{Role: provider.RoleAssistant, Thinking: th, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "list_dir", Args: json.RawMessage(`{}`)}}},
			{Role: provider.RoleTool, ToolCallID: "c1", Text: "a.txt"}}
	}
	for i, msgs := range [][]provider.Message{
		loop(),
		loop(provider.Thinking{Text: "mine", Signature: "s", Model: "claude-sonnet-4-5"}),
		loop(provider.Thinking{Text: "the key is [REDACTED:aws-access-token]", Signature: "s", Model: "claude-opus-4-1"}),
	} {
		_, err := p.Stream(t.Context(), provider.Request{Messages: msgs, ReasoningEffort: provider.EffortHigh}, func(provider.Delta) {})
		require.NoError(t, err)
		require.NotContains(t, srv.Requests[i], "thinking", "case %d: thinking stays off in this loop", i)
		sent, _ := json.Marshal(srv.Requests[i]["messages"])
		require.NotContains(t, string(sent), `"type":"thinking"`, "case %d", i)
	}
	_, err = p.Stream(t.Context(), provider.Request{Messages: loop(provider.Thinking{Text: "mine", Signature: "s", Model: "claude-opus-4-1"}),
		ReasoningEffort: provider.EffortHigh}, func(provider.Delta) {})
	require.NoError(t, err)
	require.Contains(t, srv.Requests[3], "thinking", "its own thinking: on, and given back")
	require.Equal(t, float64(32000), srv.Requests[3]["max_tokens"])
}

// TestAttachmentsAreContent: a user message's image goes as an image
// block and its PDF as a document block (base64, with the media type
// sniffed), each after its note; a text file goes inline as text.
func TestAttachmentsAreContent(t *testing.T) {
	srv := providertest.NewServer(t, "", providertest.Reply{SSE: providertest.AnthropicStream("Seen.")})
	p, err := Factory(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": srv.URL}[k]
	})("claude-sonnet-4-5")
	require.NoError(t, err)
	png := []byte("\x89PNG-bytes")
	msg := provider.Message{Role: provider.RoleUser, Text: "look", Attachments: []provider.Attachment{
		{AttachmentRef: session.AttachmentRef{Name: "shot.png", Kind: session.AttachmentImage, Type: "image/png"}, Text: "Attached file shot.png", Data: png},
		{AttachmentRef: session.AttachmentRef{Name: "spec.pdf", Kind: session.AttachmentPDF, Type: "application/pdf"}, Text: "Attached file spec.pdf", Data: []byte("%PDF-1.7")},
		{AttachmentRef: session.AttachmentRef{Name: "log.txt", Kind: session.AttachmentText, Type: "text/plain"}, Text: "<attachment>line one</attachment>"},
	}}
	_, err = p.Stream(t.Context(), provider.Request{Messages: []provider.Message{msg}}, func(provider.Delta) {})
	require.NoError(t, err)
	content := srv.Requests[0]["messages"].([]any)[0].(map[string]any)["content"].([]any)
	require.Len(t, content, 6)
	require.Equal(t, map[string]any{"type": "text", "text": "look"}, content[0])
	require.Equal(t, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(png)}}, content[2])
	require.Equal(t, map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": base64.StdEncoding.EncodeToString([]byte("%PDF-1.7"))}}, content[4])
	require.Equal(t, map[string]any{"type": "text", "text": "<attachment>line one</attachment>"}, content[5])
}
