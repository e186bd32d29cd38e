package session

import "time"

// Filter narrows a session list.
type Filter struct {
	Project string
	Agent   string
	Status  Status
	// Statuses, when set, keeps sessions in any of these statuses.
	Statuses        []Status
	IncludeArchived bool
	// Limit bounds one page (at most MaxPage; MaxPage when 0).
	Limit int
	// Before, a session's ID, starts the page after it in the list's
	// order (newest first): the cursor of the next page.
	Before string
	// Within, when Scoped, keeps only these projects' (none when empty):
	// what the caller may read.
	Scoped bool
	Within []string
}

// MaxPage is the most sessions one list returns.
const MaxPage = 1000

// ApprovalFilter narrows an approval list.
type ApprovalFilter struct {
	SessionID string
	Status    ApprovalStatus
	// Scoped and Within: as in Filter, by the session's project.
	Scoped bool
	Within []string
}

// Step is the state of a session's working copy after one step (a call
// that changed it, an acceptance, a rejection): every file that differs
// from the base commit. (A checkpoint is the audit log's signed note.)
type Step struct {
	SessionID string     `json:"sessionId"`
	Number    int        `json:"step"`
	Base      string     `json:"base"`
	Tree      string     `json:"tree"`
	CallID    string     `json:"callId"`
	Files     []StepFile `json:"files"`
	// Skipped says what the step could not hold (a file too large, a
	// nested repository): a copy made again from it lacks those.
	Skipped []string `json:"skipped,omitempty"`
	// Bundle is the blob of a git bundle that makes Base from the previous
	// step's base (the snapshot an acceptance committed), or, for a
	// copy without a repository, Base itself.
	Bundle    string    `json:"bundle,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// StepFile is a file of a step: its git mode and the blob of
// its content; Mode "" is a file deleted.
type StepFile struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"`
	Blob string `json:"blob,omitempty"`
}

// Nested is a session of a forest, at its depth (0: a root).
type Nested struct {
	Session
	Depth int
}

// Flat is list as it is, every session a root.
func Flat(list []Session) []Nested {
	out := make([]Nested, len(list))
	for i, x := range list {
		out[i] = Nested{Session: x}
	}
	return out
}

// Forest orders list (newest first) as trees: each session the agent of
// another listed session started comes right after it, one level deeper,
// in list order; the others are roots, in list order.
func Forest(list []Session) []Nested {
	listed := map[string]bool{}
	for _, x := range list {
		listed[x.ID] = true
	}
	kids := map[string][]Session{}
	var roots []Session
	for _, x := range list {
		if p := x.StartedBy(); p != "" && listed[p] && p != x.ID {
			kids[p] = append(kids[p], x)
		} else {
			roots = append(roots, x)
		}
	}
	out := make([]Nested, 0, len(list))
	seen := map[string]bool{}
	var walk func(x Session, depth int)
	walk = func(x Session, depth int) {
		if seen[x.ID] {
			return
		}
		seen[x.ID] = true
		out = append(out, Nested{x, depth})
		for _, k := range kids[x.ID] {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	for _, x := range list { // a cycle no root reaches (never made, but listed)
		walk(x, 0)
	}
	return out
}
