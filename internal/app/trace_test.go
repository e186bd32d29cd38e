package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/client"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spans"
	"github.com/paddock-dev/paddock/internal/telemetry/jaegertest"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestTraceOfATurnAcrossTwoNodes sends two `paddock serve` nodes' spans
// (one PostgreSQL database, one cluster) to a real Jaeger: a turn with
// two refused calls, one allowed and one asked, its approval decided on
// the node that does not hold the session's copy, comes back from
// Jaeger's query API as one trace: the turn's root, its model calls
// (GenAI attributes, tokens), the gate's decisions, the tools and their
// commands and checkpoints under them, the approval's wait, from both
// nodes; and nothing of what the calls said is in it.
func TestTraceOfATurnAcrossTwoNodes(t *testing.T) {
	ownCluster(t)
	if testing.Short() {
		t.Skip("starts real servers")
	}
	j := jaegertest.Start(t)
	ctx := context.Background()
	nodes := twoNodes(t, func(d string) { scriptIn(t, d, "gated.yaml") },
		"OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLP, "OTEL_BSP_SCHEDULE_DELAY=100", "PADDOCK_METRICS_LISTEN=off")
	a := nodes[0].client
	clients := map[string]*client.Client{nodes[0].name: a, nodes[1].name: nodes[1].client}

	_, err := a.Projects().SetPolicy(ctx, "default", []byte("default: ask\ncommands:\n  allow: [ls]\ncontinueAfterToolRejection: true\n"))
	require.NoError(t, err)
	x, err := a.Sessions().Create(ctx, wire.CreateRequest{Model: "replay/gated.yaml", Message: "go", Repo: gitRepo(t)})
	require.NoError(t, err)
	var pending []session.Approval
	waitFor(t, "the approval request", func() (bool, error) {
		pending, err = a.Gates().Approvals(ctx, session.ApprovalFilter{SessionID: x.ID, Status: session.ApprovalPending})
		return len(pending) == 1, err
	})
	s, err := a.Sessions().Get(ctx, x.ID)
	require.NoError(t, err)
	var other string
	for n := range clients {
		if n != s.Node {
			other = n
		}
	}
	require.NotEmpty(t, other, "the copy is on one of the two nodes")
	_, err = clients[other].Gates().Decide(ctx, pending[0].ID, true, "fine")
	require.NoError(t, err)
	var turns []session.Turn
	waitFor(t, "the turn to complete", func() (bool, error) {
		turns, err = a.Sessions().Turns(ctx, x.ID)
		return len(turns) == 1 && turns[0].Status == session.TurnCompleted, err
	})

	traceID, rootID := spans.Turn(turns[0].ID)
	events, err := a.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	named := 0
	for _, e := range events {
		var d session.TurnData
		if e.Kind == session.EventTurn && json.Unmarshal(e.Data, &d) == nil {
			require.Equal(t, traceID.String(), d.TraceID, "the transcript names the turn's trace")
			named++
		}
	}
	require.Positive(t, named)
	var tr jaegertest.Trace
	count := func(name string) int {
		n := 0
		for _, sp := range tr.Spans {
			if sp.OperationName == name {
				n++
			}
		}
		return n
	}
	waitFor(t, "the turn's trace, whole, in Jaeger", func() (bool, error) {
		tr, err = j.Trace(traceID.String())
		return count("turn") == 1 && count("chat gated.yaml") == 2 && count("gate run_command") == 4 && count("execute_tool run_command") == 2 &&
			count("command") == 2 && count("approval run_command") == 1 && count("checkpoint") == 2, err
	})
	byID := map[string]jaegertest.Span{}
	instances := map[string]bool{}
	for _, sp := range tr.Spans {
		byID[sp.SpanID] = sp
		instances[tr.Instance(sp)] = true
	}
	for _, sp := range tr.Spans {
		switch sp.OperationName {
		case "turn":
			require.Equal(t, rootID.String(), sp.SpanID)
			require.Empty(t, sp.Parent())
			require.Equal(t, x.ID, sp.Tag("paddock.session_id"))
			require.Equal(t, "completed", sp.Tag("paddock.turn.status"))
		case "chat gated.yaml":
			require.Equal(t, rootID.String(), sp.Parent())
			require.Equal(t, "replay", sp.Tag("gen_ai.provider.name"))
			require.NotEmpty(t, sp.Tag("gen_ai.usage.input_tokens"))
		case "gate run_command", "execute_tool run_command", "approval run_command":
			require.Equal(t, rootID.String(), sp.Parent(), sp.OperationName)
		case "command", "checkpoint":
			require.Equal(t, "execute_tool run_command", byID[sp.Parent()].OperationName, "a %s is its tool call's", sp.OperationName)
		}
		for _, tag := range sp.Tags {
			require.NotContains(t, fmt.Sprint(tag.Value), "made.txt", "%s: no call's content in a span", sp.OperationName)
		}
	}
	verdicts := map[string]int{}
	for _, sp := range tr.Spans {
		if sp.OperationName == "gate run_command" {
			verdicts[sp.Tag("paddock.gate.verdict")]++
		}
	}
	require.Equal(t, map[string]int{"refuse": 2, "allow": 1, "ask": 1}, verdicts)
	require.Len(t, instances, 2, "the turn's spans came from both nodes: %v", instances)
	require.True(t, strings.HasPrefix(tr.Processes[tr.Spans[0].ProcessID].ServiceName, "paddock"))
}
