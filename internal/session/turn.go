package session

import (
	"cmp"
	"time"
)

// TurnStatus is a turn's place on its ladder.
type TurnStatus string

// Turn statuses.
const (
	TurnAccepted        TurnStatus = "accepted"
	TurnInProgress      TurnStatus = "in_progress"
	TurnWaitingForInput TurnStatus = "waiting_for_input"
	TurnCompleted       TurnStatus = "completed"
	TurnFailed          TurnStatus = "failed"
	TurnStale           TurnStatus = "stale"
)

// Settled reports whether the turn has left accepted and in_progress.
func (t TurnStatus) Settled() bool {
	return t != TurnAccepted && t != TurnInProgress
}

// FailureScope decides whether a failed turn takes its session with it.
type FailureScope string

// Failure scopes.
const (
	ScopeTurn    FailureScope = "turn"
	ScopeSession FailureScope = "session"
)

// Turn is the execution of one or more commands.
type Turn struct {
	ID           string       `json:"id"`
	SessionID    string       `json:"sessionId"`
	Seq          int64        `json:"seq"`
	Status       TurnStatus   `json:"status"`
	FailureScope FailureScope `json:"failureScope,omitempty"`
	Error        string       `json:"error,omitempty"`
	CommandIDs   []string     `json:"commandIds"`
	CreatedAt    time.Time    `json:"createdAt"`
	UpdatedAt    time.Time    `json:"updatedAt"`
}

// StatusAfterTurn derives the session status from a turn fact. A terminal
// current status always wins: a concurrent stop is never overwritten.
func StatusAfterTurn(current Status, turn TurnStatus, scope FailureScope) Status {
	if current.Terminal() {
		return current
	}
	switch turn {
	case TurnAccepted, TurnInProgress:
		return StatusRunning
	case TurnWaitingForInput, TurnCompleted, TurnStale:
		return StatusAwaiting
	case TurnFailed:
		if scope == ScopeSession {
			return StatusFailed
		}
		return StatusAwaiting
	}
	return current
}

// Usage is what model calls consumed.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	// ThinkingTokens are the output tokens the model spent reasoning,
	// where its provider reports them apart (priced as output).
	ThinkingTokens int     `json:"thinkingTokens,omitempty"`
	CostUSD        float64 `json:"costUsd"`
	// ReasoningEffort is the one a step was called with (a step's usage;
	// of a sum, the last step's).
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// Add sums usage.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens, ThinkingTokens: u.ThinkingTokens + o.ThinkingTokens,
		CostUSD: u.CostUSD + o.CostUSD, ReasoningEffort: cmp.Or(o.ReasoningEffort, u.ReasoningEffort)}
}

// SessionUsage is a session's usage, in all and per turn.
type SessionUsage struct {
	Usage
	Turns map[string]Usage `json:"turns"`
}
