package openai

import (
	"encoding/base64"
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
			return map[string]string{"OPENAI_BASE_URL": base}[k]
		})("local-model")
		require.NoError(t, err)
		return p
	})
}

func TestMissingKeyIsAClearError(t *testing.T) {
	_, err := Factory(func(string) string { return "" })("gpt-test")
	require.ErrorContains(t, err, "OPENAI_API_KEY is not set")
}

// TestReasoningEffortIsReasoningEffort: an effort is the request's
// reasoning_effort; the reasoning tokens the usage reports are counted
// apart (and within the output tokens); no effort sends none.
func TestReasoningEffortIsReasoningEffort(t *testing.T) {
	stream := strings.Replace(providertest.OpenAIStream("Thought it through."), `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`,
		`"usage":{"prompt_tokens":10,"completion_tokens":50,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":45}}`, 1)
	srv := providertest.NewServer(t, "", providertest.Reply{SSE: stream}, providertest.Reply{SSE: providertest.OpenAIStream("Plain.")})
	p, err := Factory(func(k string) string { return map[string]string{"OPENAI_BASE_URL": srv.URL}[k] })("gpt-5")
	require.NoError(t, err)
	ask := []provider.Message{{Role: provider.RoleUser, Text: "think"}}
	resp, err := p.Stream(t.Context(), provider.Request{Messages: ask, ReasoningEffort: provider.EffortHigh}, func(provider.Delta) {})
	require.NoError(t, err)
	require.Equal(t, "high", srv.Requests[0]["reasoning_effort"])
	require.Equal(t, provider.Usage{InputTokens: 10, OutputTokens: 50, ThinkingTokens: 45}, resp.Usage)
	_, err = p.Stream(t.Context(), provider.Request{Messages: ask}, func(provider.Delta) {})
	require.NoError(t, err)
	require.NotContains(t, srv.Requests[1], "reasoning_effort")
}

// TestAttachmentsAreContentParts: a user message with files becomes
// content parts: an image as an image_url data URL, a PDF as a file
// part, a text file inline as text.
func TestAttachmentsAreContentParts(t *testing.T) {
	srv := providertest.NewServer(t, "", providertest.Reply{SSE: providertest.OpenAIStream("Seen.")})
	p, err := Factory(func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": srv.URL}[k]
	})("gpt-4o")
	require.NoError(t, err)
	jpeg := []byte("\xff\xd8\xffjpeg")
	msg := provider.Message{Role: provider.RoleUser, Text: "look", Attachments: []provider.Attachment{
		{AttachmentRef: session.AttachmentRef{Name: "shot.jpg", Kind: session.AttachmentImage, Type: "image/jpeg"}, Text: "Attached file shot.jpg", Data: jpeg},
		{AttachmentRef: session.AttachmentRef{Name: "spec.pdf", Kind: session.AttachmentPDF, Type: "application/pdf"}, Data: []byte("%PDF-1.7")},
		{AttachmentRef: session.AttachmentRef{Name: "log.txt", Kind: session.AttachmentText, Type: "text/plain"}, Text: "<attachment>line one</attachment>"},
	}}
	_, err = p.Stream(t.Context(), provider.Request{Messages: []provider.Message{msg}}, func(provider.Delta) {})
	require.NoError(t, err)
	user := srv.Requests[0]["messages"].([]any)[0].(map[string]any)
	require.Equal(t, "user", user["role"])
	parts := user["content"].([]any)
	require.Len(t, parts, 5)
	require.Equal(t, map[string]any{"type": "text", "text": "look"}, parts[0])
	require.Equal(t, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)}}, parts[2])
	require.Equal(t, map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.7")), "filename": "spec.pdf"}}, parts[3])
	require.Equal(t, map[string]any{"type": "text", "text": "<attachment>line one</attachment>"}, parts[4])
}
