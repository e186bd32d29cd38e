package session

import "time"

// CommandHeld is the state of a park's recovery command: recorded, not
// dispatched until the park resolves (then pending) or expires (then
// canceled).
const CommandHeld CommandState = "held"

// Park keeps a session resumable while it waits on a person or a
// condition (an extension, a raised spend cap, credits, the provider),
// without a status of its own: the session is awaiting, its failed turn
// turn-scoped, and a held recovery command becomes due when the park
// resolves. A TTL that runs out resolves it expired and ends the session.
type Park struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// Reason is one of bound.Reasons; Detail says what happened; Needs
	// what would resolve it (and the command that gives it).
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	Needs  string `json:"needs"`
	// RecoveryCommand is the held command that resumes the session.
	RecoveryCommand string     `json:"recoveryCommand"`
	CreatedAt       time.Time  `json:"createdAt"`
	ExpiresAt       *time.Time `json:"expiresAt,omitempty"`
	ResolvedAt      *time.Time `json:"resolvedAt,omitempty"`
	Resolution      string     `json:"resolution,omitempty"`
	ResolvedBy      *Sender    `json:"resolvedBy,omitempty"`
	Note            string     `json:"note,omitempty"`
}

// Park resolutions.
const (
	// ParkGranted: a person gave what it needed (an extension, a cap).
	ParkGranted = "granted"
	// ParkCleared: its condition cleared (the provider answered again), or
	// a person said it had.
	ParkCleared = "cleared"
	// ParkExpired: its TTL ran out; the session ends.
	ParkExpired = "expired"
	// ParkCanceled: the session ended meanwhile.
	ParkCanceled = "canceled"
)

// ParkData is the data of a park event: a park opened or resolved.
type ParkData struct {
	Park Park `json:"park"`
}
