package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/internal/clip"
)

// ToolCallState is where a tool call is in its life.
type ToolCallState string

// Tool-call states: generating → generated → (awaiting_approval) → calling →
// done | errored, plus canceled and rejected.
const (
	CallGenerating       ToolCallState = "generating"
	CallGenerated        ToolCallState = "generated"
	CallAwaitingApproval ToolCallState = "awaiting_approval"
	CallCalling          ToolCallState = "calling"
	CallDone             ToolCallState = "done"
	CallErrored          ToolCallState = "errored"
	CallCanceled         ToolCallState = "canceled"
	CallRejected         ToolCallState = "rejected"
)

// Final reports whether the call has left its intermediate states.
func (s ToolCallState) Final() bool {
	switch s {
	case CallDone, CallErrored, CallCanceled, CallRejected:
		return true
	}
	return false
}

var callTransitions = map[ToolCallState][]ToolCallState{
	CallGenerating:       {CallGenerated, CallErrored, CallCanceled},
	CallGenerated:        {CallAwaitingApproval, CallCalling, CallErrored, CallCanceled, CallRejected},
	CallAwaitingApproval: {CallCalling, CallRejected, CallCanceled},
	CallCalling:          {CallDone, CallErrored, CallCanceled},
}

// Transition checks that a tool call may move from one state to another.
func (s ToolCallState) Transition(to ToolCallState) error {
	for _, ok := range callTransitions[s] {
		if ok == to {
			return nil
		}
	}
	return fmt.Errorf("tool call cannot move from %s to %s", s, to)
}

// ToolCallData is the data of a tool_call event: the call's state after the change.
type ToolCallData struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	State  ToolCallState   `json:"state"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result string          `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// Verdict and Rule are the gate's decision (on awaiting_approval,
	// calling and rejected); Approval names the pending request.
	Verdict  string       `json:"verdict,omitempty"`
	Rule     string       `json:"rule,omitempty"`
	Approval string       `json:"approval,omitempty"`
	By       *Attribution `json:"approvedBy,omitempty"`
	// Run names the execution that recorded calling: of two attempts at
	// one call (a retry after a crash, or while the first still runs),
	// only the one whose run was recorded executes.
	Run string `json:"run,omitempty"`
	// Child is the session a delegate call started (from calling on).
	Child string `json:"child,omitempty"`
}

// Question is a structured question the agent asks the user.
type Question struct {
	ToolCallID string         `json:"toolCallId"`
	Questions  []QuestionItem `json:"questions"`
}

// Check says what is wrong with answers (item ID → choice) to q: an item
// it does not have, or a choice outside an item's options where it
// offers only options.
func (q Question) Check(answers map[string]string) error {
	items := map[string]QuestionItem{}
	var ids []string
	for _, it := range q.Questions {
		items[it.ID] = it
		ids = append(ids, it.ID)
	}
	for id, v := range answers {
		it, ok := items[id]
		if !ok {
			return fmt.Errorf("question %s has no item %q (it has %s)", q.ToolCallID, clip.String(id, 64), strings.Join(ids, ", "))
		}
		if len(it.Options) > 0 && !it.AllowOther && !slices.Contains(it.Options, v) {
			return fmt.Errorf("%s=%q: want one of %s (or send a free-text response)", id, clip.String(v, 64), strings.Join(it.Options, ", "))
		}
	}
	return nil
}

// QuestionItem is one question with its options. Where it offers options,
// an answer picks one of them unless AllowOther; free text always fits in
// the answer's response.
type QuestionItem struct {
	ID         string   `json:"id"`
	Question   string   `json:"question"`
	Options    []string `json:"options,omitempty"`
	AllowOther bool     `json:"allowOther,omitempty"`
}
