package spec

import (
	"encoding/json"
	"time"
)

// Record is an agent spec as applied to a project: its JSON, its
// digest and when it was created and last changed.
type Record struct {
	Project     string          `json:"project"`
	Name        string          `json:"name"`
	Spec        json.RawMessage `json:"spec"`
	Digest      string          `json:"digest"`
	Concurrency int             `json:"concurrency"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
}

// ApplyResult says what an apply did to one agent.
type ApplyResult string

// Apply results, as kubectl prints them.
const (
	Created    ApplyResult = "created"
	Configured ApplyResult = "configured"
	Unchanged  ApplyResult = "unchanged"
)
