package redacted

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// attackInner records what the decorator hands the real store.
type attackInner struct {
	store.Store
	events    []session.Event
	approvals []session.Approval
}

func (s *attackInner) AppendEvent(_ context.Context, e session.Event) (session.Event, error) {
	s.events = append(s.events, e)
	return e, nil
}

func (s *attackInner) CreateApproval(_ context.Context, a session.Approval) (session.Approval, error) {
	s.approvals = append(s.approvals, a)
	return a, nil
}

// TestAttackStoreUnredactedFields: Event.Key is built from the provider's
// tool-call ID (agent.Step: "call/<id>/generating", IDs up to 128 bytes
// kept), and Approval.ToolCallID / Tool come from the model's call; none is
// passed through secret, while the same ID inside Data is redacted.
func TestAttackStoreUnredactedFields(t *testing.T) {
	ctx := context.Background()
	inner := &attackInner{}
	st := Store{Store: inner}
	id := "call_" + githubPAT
	data, _ := json.Marshal(session.ToolCallData{ID: id, Name: "bash", State: session.CallGenerating})
	if _, err := st.AppendEvent(ctx, session.Event{SessionID: "s", Kind: session.EventToolCall, Key: "call/" + id + "/generating", Data: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateApproval(ctx, session.Approval{ID: "a", SessionID: "s", ToolCallID: id, Tool: "bash " + awsKey, Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if k := inner.events[0].Key; strings.Contains(k, githubPAT) {
		t.Errorf("event key keeps the secret: %q (data: %s)", k, inner.events[0].Data)
	}
	if a := inner.approvals[0]; strings.Contains(a.ToolCallID, githubPAT) || strings.Contains(a.Tool, awsKey) {
		t.Errorf("approval keeps the secret: toolCallId %q tool %q", a.ToolCallID, a.Tool)
	}
}
