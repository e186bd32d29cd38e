package provider

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolCallCarriesArgumentsVerbatim: any argument text survives JSON
// encoding byte for byte, and records from before (arguments as a JSON
// value) still decode.
func TestToolCallCarriesArgumentsVerbatim(t *testing.T) {
	for _, args := range []string{`{"path":"x"}`, `{"path": "no`, "{\"p\":\"a\xff\xfe\"}", `"."`, `[1,2]`, ``, `{"a":"\u00e9 é"}`} {
		in := Response{ToolCalls: []ToolCall{{ID: "c", Name: "read_file", Args: json.RawMessage(args)}}}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var out Response
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got := string(out.ToolCalls[0].Args); got != args {
			t.Errorf("args %q came back as %q", args, got)
		}
	}
	var old ToolCall
	if err := json.Unmarshal([]byte(`{"id":"c","name":"n","args":{"path":"x"}}`), &old); err != nil || string(old.Args) != `{"path":"x"}` {
		t.Errorf("old record: %v %s", err, old.Args)
	}
}

func TestEffortsAreKnownPerModel(t *testing.T) {
	require.Equal(t, []string{EffortLow, EffortMedium, EffortHigh}, Efforts("anthropic/claude-sonnet-4-5"))
	require.Equal(t, []string{EffortMinimal, EffortLow, EffortMedium, EffortHigh}, Efforts("openai/gpt-5-mini"))
	require.Nil(t, Efforts("openai/gpt-4.1"))
	require.Nil(t, Efforts("anthropic/claude-3-5-haiku-latest"))
	require.NoError(t, CheckEffort("openai/o3", EffortLow))
	require.NoError(t, CheckEffort("openai/gpt-4.1", ""))
	require.ErrorContains(t, CheckEffort("openai/gpt-4.1", EffortHigh), "has no reasoning setting")
	require.ErrorContains(t, CheckEffort("anthropic/claude-opus-4-1", EffortMinimal), "takes low, medium, high")
}
