package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
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
