package provider

import (
	"encoding/json"
	"testing"
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
