// Package session is the domain of Paddock sessions: sessions, commands, turns
// and tool calls, their statuses, and the pure rules that move them. It has no
// I/O; the store persists these types and the engine drives them.
package session

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
)

// Status is a session's one status at any time.
type Status string

// Session statuses. queued, running and awaiting are resumable; failed and
// stopped are terminal.
const (
	StatusQueued   Status = "queued"
	StatusRunning  Status = "running"
	StatusAwaiting Status = "awaiting"
	StatusFailed   Status = "failed"
	StatusStopped  Status = "stopped"
)

// Terminal reports whether no command can reach a session in this status.
func (s Status) Terminal() bool { return s == StatusFailed || s == StatusStopped }

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusAwaiting, StatusFailed, StatusStopped:
		return true
	}
	return false
}

// RuntimePhase narrates provisioning beneath the status; empty once settled.
type RuntimePhase string

// Provisioning phases, in order; only those that happen are entered.
// building_image runs the environment's setup and saves its result as a
// layer (a cache miss); preparing_environment makes the working copy and
// restores the layer into it (a hit, or no setup); booting_container is
// reserved for runtimes that boot a machine or container per session (the
// local sandbox starts one per command, so it is never entered);
// starting_runtime resolves the model's provider.
const (
	PhaseBuildingImage        RuntimePhase = "building_image"
	PhaseBootingContainer     RuntimePhase = "booting_container"
	PhasePreparingEnvironment RuntimePhase = "preparing_environment"
	PhaseStartingRuntime      RuntimePhase = "starting_runtime"
)

// Session is one durable execution of an agent.
type Session struct {
	ID            string          `json:"id"`
	Project       string          `json:"project"`
	Agent         string          `json:"agent"`
	AgentSpec     json.RawMessage `json:"agentSpec"`
	AgentVersion  string          `json:"agentVersion"`
	SpendCapUSD   float64         `json:"spendCapUsd"`
	Status        Status          `json:"status"`
	RuntimePhase  RuntimePhase    `json:"runtimePhase,omitempty"`
	ArchivedAt    *time.Time      `json:"archivedAt,omitempty"`
	Error         string          `json:"error,omitempty"`
	FailureReason string          `json:"failureReason,omitempty"`
	DisplayTitle  string          `json:"displayTitle"`
	AmbientStatus string          `json:"ambientStatus,omitempty"`
	Input         string          `json:"input,omitempty"`
	Repo          string          `json:"repo,omitempty"`
	// Remote, for a session on a remote repository, is where its copy
	// comes from (Repo is then the repository's address).
	Remote *Remote `json:"remote,omitempty"`
	// Node is the node holding the working copy (empty on a lone node).
	Node           string `json:"node,omitempty"`
	Workdir        string `json:"workdir,omitempty"`
	BaseCommit     string `json:"baseCommit,omitempty"`
	RetryOf        string `json:"retryOf,omitempty"`
	Handoff        string `json:"handoff,omitempty"`
	StopReason     string `json:"stopReason,omitempty"`
	RespawnRequest bool   `json:"respawnRequested,omitempty"`
	// Policy is the policy pinned on the session at creation (JSON of
	// policy.Policy), identified by PolicyDigest.
	Policy       json.RawMessage `json:"policy,omitempty"`
	PolicyDigest string          `json:"policyDigest,omitempty"`
	// Interactive sessions wait for approvals; others reject an "ask" at
	// once unless Approver names who will decide.
	Interactive bool   `json:"interactive"`
	Approver    string `json:"approver,omitempty"`
	// Delivery is what became of the diff: "", accepted, rejected or
	// waived.
	Delivery string `json:"delivery,omitempty"`
	// Hold freezes the session for inspection: no turn runs, nothing is
	// reaped, discarded or deleted until it is released.
	Hold      *Hold     `json:"hold,omitempty"`
	CreatedBy Sender    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Remote is a remote repository a session works on, as its project's
// connection grants it, at the commit its ref named at creation.
type Remote struct {
	Connection string `json:"connection"`
	URL        string `json:"url"`
	Path       string `json:"path"`
	// Ref is the ref as asked (a branch, tag, commit or pull request);
	// Commit is what it resolved to when the session was created.
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit"`
}

// Binding ties a session to what it works on outside it: a pull request
// (Kind BindPullRequest) it started from or delivered. A held binding
// keeps the session from declaring itself done until the forge's closing
// delivery (a trigger with release: true) or its archiving releases it.
type Binding struct {
	ID         string     `json:"id"`
	SessionID  string     `json:"sessionId"`
	Project    string     `json:"project"`
	Kind       string     `json:"kind"`
	Connection string     `json:"connection"`
	Repo       string     `json:"repo"`
	Number     int64      `json:"number"`
	URL        string     `json:"url"`
	Held       bool       `json:"held"`
	CreatedAt  time.Time  `json:"createdAt"`
	ReleasedAt *time.Time `json:"releasedAt,omitempty"`
	ReleasedBy string     `json:"releasedBy,omitempty"`
}

// BindPullRequest is the kind of a binding to a pull (merge) request.
const BindPullRequest = "pull_request"

// HeldError refuses to archive a session on anyone's word but a
// person's while it is bound to an open pull request (a held binding
// not released): it is not done, neither by its own word nor for having
// been idle, until the forge says the pull request closed.
type HeldError struct{ URL string }

func (e *HeldError) Error() string {
	return "the session is bound to " + e.URL + " (held) until the forge says it closed"
}

// Is makes a HeldError a conflict (errdefs.ErrConflict: HTTP 409).
func (e *HeldError) Is(target error) bool { return target == errdefs.ErrConflict }

// Delegated is the session that delegated this one its task and the
// call it did so with ("" when it was not delegated): its creator is
// that session's agent, through a delegate call.
func (s Session) Delegated() (parent, call string) {
	if s.CreatedBy.Kind != SenderAgent {
		return "", ""
	}
	call, ok := strings.CutPrefix(s.CreatedBy.Via, ViaDelegate)
	if !ok {
		return "", ""
	}
	return s.CreatedBy.ID, call
}

// StartedBy is the session whose agent started this one (a delegation or
// a sessions_spawn call); "" when a person, a trigger or the platform did.
func (s Session) StartedBy() string {
	if s.CreatedBy.Kind == SenderAgent {
		return s.CreatedBy.ID
	}
	return ""
}

// ViaDelegate begins the Via of an agent's session started by a delegate
// call (then the call's TURN/CALL); ViaSpawn, by a sessions_spawn call.
const (
	ViaDelegate = "delegate:"
	ViaSpawn    = "sessions_spawn:"
)

// Deliveries of a session's diff.
const (
	DeliveryAccepted = "accepted"
	DeliveryRejected = "rejected"
	// DeliveryWaived: a person waived the agent's delivery requirement.
	DeliveryWaived = "waived"
)

// Hold is who froze a session, why and when.
type Hold struct {
	By     Sender    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Held says whether the session is held.
func (s Session) Held() bool { return s.Hold != nil }

// StopBudget begins the stop reason of a session whose budget ran out and
// could not be extended: it stopped cleanly, with a final summary, and
// its work is kept for review like a failed session's.
const StopBudget = "budget exhausted"

// BudgetStopped says whether the session stopped because its budget ran
// out.
func (s Session) BudgetStopped() bool {
	return s.Status == StatusStopped && strings.HasPrefix(s.StopReason, StopBudget)
}

// WorkflowID is the ID of the session's SessionWorkflow, derived from its ID.
func WorkflowID(sessionID string) string { return "session/" + sessionID }

// MaxHandoff is the longest handoff note kept, in characters.
const MaxHandoff = 20000

// MaxDisplayTitle is the longest display title, in characters.
const MaxDisplayTitle = 64

// TrimRunes cuts s to at most n characters (runes), marking the cut with "…".
func TrimRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}
