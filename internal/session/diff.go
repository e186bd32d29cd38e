package session

// ChangedFile is one changed file of a diff.
type ChangedFile struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // added, modified, deleted, renamed
	Flagged bool   `json:"flagged,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Diff is the session's deliverable: every change against the base commit.
type Diff struct {
	Base  string        `json:"base"`
	Files []ChangedFile `json:"files"`
	Patch string        `json:"patch"`
	// Tree is the git tree of the working copy the diff was taken from:
	// accepting names it, so exactly what was reviewed becomes the new base.
	Tree string `json:"tree,omitempty"`
	// Skipped are paths left out, each with why: nested repositories
	// without a commit or that the host will not read, files over
	// MaxFileSize.
	Skipped []string `json:"skipped,omitempty"`
}

// Flagged reports whether any file is under dedicated control.
func (d Diff) Flagged() []ChangedFile {
	var out []ChangedFile
	for _, f := range d.Files {
		if f.Flagged {
			out = append(out, f)
		}
	}
	return out
}

// ApplyMode says how an accepted diff lands in the user's repository.
type ApplyMode string

// Apply modes.
const (
	AsCommit      ApplyMode = "commit"
	AsUncommitted ApplyMode = "uncommitted"
)
