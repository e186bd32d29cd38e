package provider

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
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

// TestInputIsKnownPerModel: images and PDF documents go to the models
// that take them; text to every model; the refusal names the model.
func TestInputIsKnownPerModel(t *testing.T) {
	for _, c := range []struct {
		model      string
		image, pdf bool
	}{
		{"anthropic/claude-sonnet-4-5", true, true},
		{"anthropic/claude-3-5-sonnet-latest", true, true},
		{"anthropic/claude-3-haiku-20240307", true, false},
		{"anthropic/claude-3-5-haiku-latest", false, false},
		{"openai/gpt-4o", true, true},
		{"openai/gpt-5-mini", true, true},
		{"openai/o3", true, true},
		{"openai/gpt-3.5-turbo", false, false},
		{"openai/o1-mini", false, false},
		{"openai/llama-3-local", false, false},
		{"replay/demo", true, true},
	} {
		require.Equal(t, c.image, Input(c.model, session.AttachmentImage) == nil, "%s images", c.model)
		require.Equal(t, c.pdf, Input(c.model, session.AttachmentPDF) == nil, "%s PDF", c.model)
		require.NoError(t, Input(c.model, session.AttachmentText), c.model)
	}
	require.ErrorContains(t, Input("openai/gpt-3.5-turbo", session.AttachmentImage), "model openai/gpt-3.5-turbo does not take images")
}
