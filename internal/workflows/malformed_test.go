package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/provider/anthropic"
	"github.com/paddock-dev/paddock/internal/provider/openai"
	"github.com/paddock-dev/paddock/internal/provider/providertest"
	"github.com/paddock-dev/paddock/internal/session"
)

// TestMalformedToolCalls drives the real workflow and activities with both
// SDK providers against recorded-style streams whose tool calls are broken
// every way a model breaks them. Every call must end errored (or done) with
// the reason returned to the model, the turn must go on to the model's next
// step, and no call may be left in an intermediate state.
func TestMalformedToolCalls(t *testing.T) {
	big := `{"path":"` + strings.Repeat("a", 1<<20) + `"}`
	calls := []providertest.Call{
		{ID: "c_trunc", Name: "read_file", Args: `{"path": "notes.t`},
		{ID: "c_utf8", Name: "read_file", Args: "{\"path\": \"n\xff\xfeotes.txt\"}"},
		{ID: "c_array", Name: "read_file", Args: `["notes.txt"]`},
		{ID: "c_string", Name: "list_dir", Args: `"."`},
		{ID: "c_unknown", Name: "rm_everything", Args: `{}`},
		{ID: "c_noname", Name: "", Args: `{}`},
		{ID: "c_dup", Name: "read_file", Args: `{"path":"notes.txt"}`},
		{ID: "c_dup", Name: "list_dir", Args: `{"path":"."}`},
		{ID: "c_big", Name: "write_file", Args: big},
	}
	streams := map[string]func(string, ...providertest.Call) string{
		"anthropic": providertest.AnthropicStream,
		"openai":    providertest.OpenAIStream,
	}
	for name, stream := range streams {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			srv := providertest.NewServer(t, "",
				providertest.Reply{SSE: stream("Trying some calls.", calls...)},
				providertest.Reply{SSE: stream("I see the errors; done.")})
			env := map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL}
			if name == "anthropic" {
				f.acts.Providers.Register("anthropic", anthropic.Factory(func(k string) string { return env[k] }))
			} else {
				f.acts.Providers.Register("openai", openai.Factory(func(k string) string { return env[k] }))
			}
			f.create(t, "m1", name+"/test-model", "go")
			f.env.RegisterDelayedCallback(func() { f.send(t, "m1", session.KindStop, session.StopPayload{}) }, time.Minute)
			f.env.ExecuteWorkflow(SessionWorkflow, Input{SessionID: "m1"})
			require.True(t, f.env.IsWorkflowCompleted())
			require.NoError(t, f.env.GetWorkflowError())

			ctx := context.Background()
			turns, err := f.store.ListTurns(ctx, "m1")
			require.NoError(t, err)
			require.Len(t, turns, 1)
			require.Equal(t, session.TurnCompleted, turns[0].Status, turns[0].Error)
			require.Len(t, srv.Requests, 2, "the loop went on to the next model step")

			events, err := f.store.ListEvents(ctx, "m1", 0, 0)
			require.NoError(t, err)
			last := map[string]session.ToolCallData{}
			var order []string
			for _, e := range events {
				if e.Kind != session.EventToolCall {
					continue
				}
				var d session.ToolCallData
				require.NoError(t, json.Unmarshal(e.Data, &d))
				if _, ok := last[d.ID]; !ok {
					order = append(order, d.ID)
				}
				last[d.ID] = d
			}
			require.Len(t, order, len(calls), "every call has its own record, duplicates and nameless ones too: %v", order)
			for _, id := range order {
				require.True(t, last[id].State.Final(), "%s is left %s", id, last[id].State)
			}
			errText := func(id string) string {
				require.Equal(t, session.CallErrored, last[id].State, id)
				return last[id].Error
			}
			require.Contains(t, errText("c_trunc"), "not valid JSON (unexpected end of JSON input)")
			require.Contains(t, errText("c_array"), "want a JSON object, got an array")
			require.Contains(t, errText("c_string"), "want a JSON object, got a string")
			require.Contains(t, errText("c_unknown"), `unknown tool "rm_everything"`)
			require.Contains(t, errText("c_big"), "at most 262144")
			require.True(t, last["c_utf8"].State.Final())
			var nameless, dups int
			for _, id := range order {
				switch d := last[id]; {
				case d.Name == "":
					nameless++
					require.Contains(t, errText(id), `unknown tool ""`)
				case d.Name == "list_dir" && id != "c_string", d.Name == "read_file" && id == "c_dup":
					dups++
					require.Equal(t, session.CallDone, d.State, id)
				}
			}
			require.Equal(t, 1, nameless)
			require.Equal(t, 2, dups, "both calls sharing an ID ran")

			// The model's next request carries each error as the call's result.
			body, _ := json.Marshal(srv.Requests[1])
			for _, want := range []string{"unexpected end of JSON input", "want a JSON object", "unknown tool", "at most 262144"} {
				require.Contains(t, string(body), want)
			}
			require.Less(t, len(body), 200<<10, "a dropped megabyte is not sent back")
		})
	}
}

// TestTurnNeverEndsWithOpenCalls: settling a turn ends the calls it left
// in an intermediate state; a question's call stays open while the turn
// waits for its answer.
func TestTurnNeverEndsWithOpenCalls(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.create(t, "o1", "replay/testdata/script.yaml", "")
	for i, st := range []session.TurnStatus{session.TurnCompleted, session.TurnWaitingForInput} {
		turn := "turn-o1-" + string(st)
		_, err := f.store.OpenTurn(ctx, turn, "o1", nil)
		require.NoError(t, err)
		open := map[string]session.ToolCallState{"gen": session.CallGenerating, "gend": session.CallGenerated, "wait": session.CallAwaitingApproval, "run": session.CallCalling, "ask": session.CallCalling}
		for id, state := range open {
			id = id + string(rune('0'+i))
			require.NoError(t, durable.RecordCall(ctx, f.store, "o1", turn, session.ToolCallData{ID: id, Name: "read_file", State: state}))
			if id[:3] == "ask" {
				_, err := f.store.AppendEvent(ctx, session.Event{SessionID: "o1", TurnID: turn, Kind: session.EventQuestion, Key: "question/" + id, Data: json.RawMessage(`{}`)})
				require.NoError(t, err)
			}
		}
		require.NoError(t, f.acts.Turns().SettleTurn(ctx, turn, st, "", ""))
		for id := range open {
			id = id + string(rune('0'+i))
			final, _, ok, err := durable.SettledCall(ctx, f.store, "o1", id)
			require.NoError(t, err)
			if id[:3] == "ask" && st == session.TurnWaitingForInput {
				require.Equal(t, session.CallCalling, final, "the question waits for its answer")
				continue
			}
			require.True(t, ok && final.Final(), "%s left %s after a %s turn", id, final, st)
		}
	}
}
