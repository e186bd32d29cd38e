package session

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval request stands.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalExpired  ApprovalStatus = "expired"
)

// Valid says whether s is one of the statuses above.
func (s ApprovalStatus) Valid() bool {
	switch s {
	case ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired:
		return true
	}
	return false
}

// Approval is a durable request for a human decision on one exact tool
// call: it is bound to the digest of the tool name and arguments, and lapses
// at ExpiresAt.
type Approval struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionId"`
	TurnID     string          `json:"turnId"`
	ToolCallID string          `json:"toolCallId"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Digest     string          `json:"digest"`
	Rule       string          `json:"rule"`
	Reason     string          `json:"reason"`
	Status     ApprovalStatus  `json:"status"`
	DecidedBy  *Sender         `json:"decidedBy,omitempty"`
	Note       string          `json:"note,omitempty"`
	ExpiresAt  time.Time       `json:"expiresAt"`
	CreatedAt  time.Time       `json:"createdAt"`
	DecidedAt  *time.Time      `json:"decidedAt,omitempty"`
}

// Attribution says who let a tool call run: a human (which identity) or an
// automation (which rule). There is no third kind and no default.
type Attribution struct {
	Kind string `json:"kind"` // "human" or "automation"
	// By is the human's identity; Rule the automation's rule.
	By   string `json:"by,omitempty"`
	Rule string `json:"rule,omitempty"`
	// Via is how the human authenticated when deciding ("token:ID",
	// "slack:TEAM/USER").
	Via      string `json:"via,omitempty"`
	Approval string `json:"approval,omitempty"` // the approval's ID, for humans
	// Note is what the human wrote when approving (as the approval
	// records it), shown with the call.
	Note string `json:"note,omitempty"`
}

// Attribution kinds.
const (
	ByHuman      = "human"
	ByAutomation = "automation"
)
