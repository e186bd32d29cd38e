package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
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
