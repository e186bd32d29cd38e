package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// long is a conversation of n steps, each an assistant message with one
// call and its result, after the task.
func long(n int) []provider.Message {
	msgs := []provider.Message{{Role: provider.RoleUser, Text: "the task"}}
	for i := range n {
		id := string(rune('a' + i))
		msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Text: strings.Repeat("thinking ", 50), ToolCalls: []provider.ToolCall{{ID: id, Name: "read_file"}}},
			provider.Message{Role: provider.RoleTool, ToolCallID: id, Text: strings.Repeat("result ", 50)})
	}
	return msgs
}

func TestPlanCompaction(t *testing.T) {
	msgs := long(10)
	_, ok := PlanCompaction(msgs, nil, 1_000_000)
	require.False(t, ok, "far from the window")
	cut, ok := PlanCompaction(msgs, nil, 2000)
	require.True(t, ok)
	require.Greater(t, cut, 1)
	require.Equal(t, provider.RoleAssistant, msgs[cut].Role, "the cut falls at a step's start: no result parted from its call")
	c := session.Compaction{Summary: "summary", Messages: cut, Assistant: Assistants(msgs[:cut])}
	shown := Compacted(c, msgs)
	require.Equal(t, provider.RoleUser, shown[0].Role)
	require.True(t, strings.HasPrefix(shown[0].Text, "the task"), "the task keeps its place")
	require.Contains(t, shown[0].Text, "summary")
	require.Equal(t, msgs[cut:], shown[1:])
	require.Less(t, Tokens(shown), Tokens(msgs))
	// Growing again, it compacts further, never behind the last cut.
	more := long(30)
	cut2, ok := PlanCompaction(more, &c, 2000)
	require.True(t, ok)
	require.Greater(t, cut2, cut)
	req := SummaryRequest(more, &c, cut2)
	require.Contains(t, req[0].Text, "summary", "the earlier summary is summarized again")
	require.Equal(t, provider.RoleUser, req[len(req)-1].Role)
	// Nothing new to summarize: no compaction.
	_, ok = PlanCompaction(long(1), nil, 10)
	require.False(t, ok)
}
