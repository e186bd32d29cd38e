package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeliveryBodies: JSON keeps its numbers as written; anything else,
// trailing data included, is text.
func TestDeliveryBodies(t *testing.T) {
	got := jsonOrText([]byte(`{"number": 1000000, "big": 12345678901234567890}`)).(map[string]any)
	require.Equal(t, json.Number("1000000"), got["number"])
	require.Equal(t, json.Number("12345678901234567890"), got["big"])
	for _, text := range []string{`{"a":1} trailing`, `not json`, `{"a":1}{"b":2}`, ``} {
		require.Equal(t, text, jsonOrText([]byte(text)), text)
	}
	require.Equal(t, []any{json.Number("1")}, jsonOrText([]byte(" [1] \n")))
}
