package openai

import (
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
