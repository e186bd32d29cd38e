package session

import "time"

// Attachment is a file given with a message: uploaded to a project (staged,
// its uploader's alone), then bound to the session whose message first names
// it. Its content is kept once, by digest, sealed at rest.
type Attachment struct {
	ID      string `json:"id"`
	Project string `json:"project"`
	// SessionID is the session it is bound to ("": staged, not yet sent).
	SessionID string `json:"sessionId,omitempty"`
	AttachmentRef
	// Redacted counts the secrets replaced in a text file's content before
	// it was stored.
	Redacted  int       `json:"redacted,omitempty"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
}

// AttachmentRef is an attachment as a message names it: by ID when sent,
// the rest filled in by the platform (what the transcript shows).
type AttachmentRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Kind says how the model is given it; Type is the media type its
	// content was sniffed as (never the name's extension).
	Kind   AttachmentKind `json:"kind,omitempty"`
	Type   string         `json:"type,omitempty"`
	Size   int64          `json:"size,omitempty"`
	Digest string         `json:"digest,omitempty"` // SHA-256 of the content, hex
}

// AttachmentKind is how an attachment is given to the model.
type AttachmentKind string

// Attachment kinds.
const (
	AttachmentImage AttachmentKind = "image" // image content (PNG, JPEG, GIF, WebP)
	AttachmentPDF   AttachmentKind = "pdf"   // document content
	AttachmentText  AttachmentKind = "text"  // UTF-8 text, inline
	// AttachmentFile is any other type a server allows (archives): only in
	// the working copy, the model told where.
	AttachmentFile AttachmentKind = "file"
)

// AttachmentsDir is where a session's attachments are in its working
// copy, read-only and outside its diff.
const AttachmentsDir = ".paddock/attachments"

// Path is the attachment's path in the working copy.
func (r AttachmentRef) Path() string { return AttachmentsDir + "/" + r.Name }

// MaxAttachments is the most attachments one message names.
const MaxAttachments = 10
