package session

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatusAfterTurn(t *testing.T) {
	cases := []struct {
		cur   Status
		turn  TurnStatus
		scope FailureScope
		want  Status
	}{
		{StatusQueued, TurnAccepted, "", StatusRunning},
		{StatusAwaiting, TurnInProgress, "", StatusRunning},
		{StatusRunning, TurnWaitingForInput, "", StatusAwaiting},
		{StatusRunning, TurnCompleted, "", StatusAwaiting},
		{StatusRunning, TurnStale, "", StatusAwaiting},
		{StatusRunning, TurnFailed, ScopeTurn, StatusAwaiting},
		{StatusRunning, TurnFailed, ScopeSession, StatusFailed},
		{StatusStopped, TurnCompleted, "", StatusStopped},
		{StatusStopped, TurnInProgress, "", StatusStopped},
		{StatusFailed, TurnCompleted, "", StatusFailed},
	}
	for _, c := range cases {
		require.Equal(t, c.want, StatusAfterTurn(c.cur, c.turn, c.scope), "%s + %s/%s", c.cur, c.turn, c.scope)
	}
}

func cmds(kinds ...CommandKind) []Command {
	out := make([]Command, len(kinds))
	for i, k := range kinds {
		out[i] = Command{ID: fmt.Sprint(i), Kind: k}
	}
	return out
}

func kinds(cs []Command) []CommandKind {
	var out []CommandKind
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}

func TestNextBatch(t *testing.T) {
	many := make([]CommandKind, 40)
	for i := range many {
		many[i] = KindMessage
	}
	cases := []struct {
		name    string
		pending []Command
		want    int
		first   CommandKind
	}{
		{"empty", nil, 0, ""},
		{"one message", cmds(KindMessage), 1, KindMessage},
		{"messages stop at an answer", cmds(KindMessage, KindMessage, KindAnswer, KindMessage), 2, KindMessage},
		{"answer alone", cmds(KindAnswer, KindMessage), 1, KindAnswer},
		{"stop alone", cmds(KindStop, KindMessage), 1, KindStop},
		{"at most 32", cmds(many...), MaxBatch, KindMessage},
		{"pause is skipped", cmds(KindPause, KindMessage, KindResume, KindMessage), 2, KindMessage},
		{"only undispatched", cmds(KindPause, KindCancel), 0, ""},
		{"start alone", cmds(KindStartWithMessage, KindMessage), 1, KindStartWithMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NextBatch(c.pending)
			require.Len(t, got, c.want, kinds(got))
			if c.want > 0 {
				require.Equal(t, c.first, got[0].Kind)
			}
		})
	}
}

func TestValidatePayload(t *testing.T) {
	cases := []struct {
		kind    CommandKind
		payload string
		err     string
	}{
		{KindMessage, `{"message":"hi"}`, ""},
		{KindMessage, `{"message":"  "}`, "payload.message: required"},
		{KindMessage, `{"message":"hi","extra":1}`, "unknown field"},
		{KindMessage, `{"message":7}`, "cannot unmarshal"},
		{KindAnswer, `{"toolCallId":"c","response":"ok"}`, ""},
		{KindAnswer, `{"toolCallId":"c"}`, "needs answers or a response"},
		{KindInterrupt, ``, ""},
		{KindInterrupt, `{"reason":"x"}`, ""},
		{KindStop, `{"reason":"x","respawn":true,"handoff":"h"}`, ""},
		{KindStop, `{"respawn":"yes"}`, "cannot unmarshal"},
		{KindPause, `{"reason":"x"}`, ""},
		{KindStart, `{}`, ""},
		{"explode", `{}`, "unknown command kind"},
		{KindMessage, `{"message":"a"} x`, "trailing data"},
	}
	for _, c := range cases {
		err := ValidatePayload(c.kind, json.RawMessage(c.payload))
		if c.err == "" {
			require.NoError(t, err, "%s %s", c.kind, c.payload)
		} else {
			require.ErrorContains(t, err, c.err, "%s %s", c.kind, c.payload)
		}
	}
}

func TestToolCallTransitions(t *testing.T) {
	ok := [][2]ToolCallState{
		{CallGenerating, CallGenerated}, {CallGenerated, CallCalling}, {CallGenerated, CallAwaitingApproval},
		{CallAwaitingApproval, CallCalling}, {CallAwaitingApproval, CallRejected}, {CallCalling, CallDone},
		{CallCalling, CallErrored}, {CallGenerating, CallCanceled}, {CallGenerated, CallCanceled}, {CallGenerated, CallErrored},
	}
	for _, p := range ok {
		require.NoError(t, p[0].Transition(p[1]), "%s→%s", p[0], p[1])
	}
	bad := [][2]ToolCallState{
		{CallDone, CallCalling}, {CallGenerating, CallCalling}, {CallRejected, CallCalling}, {CallCanceled, CallDone}, {CallErrored, CallDone},
	}
	for _, p := range bad {
		require.Error(t, p[0].Transition(p[1]), "%s→%s", p[0], p[1])
	}
	require.True(t, CallRejected.Final())
	require.False(t, CallAwaitingApproval.Final())
}

func TestTrimRunes(t *testing.T) {
	require.Equal(t, "héllo", TrimRunes("héllo", 5))
	require.Equal(t, "hé…", TrimRunes("héllo", 3))
}
