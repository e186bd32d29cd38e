// Package attachdesk is the attachments' use cases: a file uploaded to a
// project (checked by its content, a text file's secrets redacted, sealed
// and kept once by digest), staged for its uploader until a message of a
// session names it, then bound to that session; given to the session's
// model as its model takes it and placed read-only in the session's
// working copy; read back by those who may read the session; collected
// with it.
package attachdesk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/secret"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// Cipher seals content at rest (vault.Key).
type Cipher interface {
	Encrypt(plain, ad []byte) []byte
	Decrypt(sealed, ad []byte) ([]byte, error)
}

// Sessions finds a session its caller may act on (engine.Sessions).
type Sessions interface {
	For(ctx context.Context, p identity.Principal, id string, a identity.Action) (session.Session, error)
}

// Service is the attachments' use cases.
type Service struct {
	Store    store.Attachments
	Key      Cipher
	Access   *access.Service
	Sessions Sessions
	// Allow are the media types allowed beyond images, PDF and text
	// (PADDOCK_ATTACHMENT_TYPES): placed in the working copy only.
	Allow []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	redactions redactions
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// contentAD binds sealed content to its digest.
func contentAD(digest string) []byte { return []byte("attachment/" + digest) }

// Upload stages a file for its uploader in a project they may start
// sessions in: at most attachment.MaxFile (ErrTooLarge beyond),
// its kind sniffed from its content (ErrMediaType for a type not
// allowed), a text file's secrets redacted before anything is kept.
func (s *Service) Upload(ctx context.Context, p identity.Principal, project, name string, data []byte) (session.Attachment, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Start, fmt.Sprintf("project %q", project)); err != nil {
		return session.Attachment{}, err
	}
	name, _ = secret.Redact(name)
	name = attachment.Name(name)
	if len(data) > attachment.MaxFile {
		return session.Attachment{}, fmt.Errorf("%w: %s: more than %s, the most one attachment holds", errdefs.ErrTooLarge, name, clip.Bytes(attachment.MaxFile))
	}
	kind, err := attachment.Sniff(data, s.Allow)
	if err != nil {
		return session.Attachment{}, fmt.Errorf("%w: %s: %w", errdefs.ErrMediaType, name, err)
	}
	redacted := 0
	if kind.Kind == session.AttachmentText {
		text, rules, err := s.redact(ctx, p.Sender().String(), name, string(data))
		if err != nil {
			return session.Attachment{}, err
		}
		data, redacted = []byte(text), len(rules)
	}
	by := p.Sender().String()
	sum := sha256.Sum256(data)
	a := session.Attachment{ID: "att_" + uuid.NewString(), Project: project, Redacted: redacted, CreatedBy: by, CreatedAt: s.now().UTC(),
		AttachmentRef: session.AttachmentRef{Name: name, Kind: kind.Kind, Type: kind.Type, Size: int64(len(data)), Digest: hex.EncodeToString(sum[:])}}
	err = s.Store.AddAttachment(ctx, a, s.Key.Encrypt(data, contentAD(a.Digest)), attachment.MaxStaged)
	if errors.Is(err, errdefs.ErrTooLarge) {
		return session.Attachment{}, fmt.Errorf("%w: %s: with it your attachments not yet sent in project %s would hold more than %s (send them, or wait %s for them to be collected)",
			errdefs.ErrTooLarge, name, project, clip.Bytes(attachment.MaxStaged), attachment.StagedFor)
	}
	if err != nil {
		return session.Attachment{}, err
	}
	return a, nil
}

// MaxRedaction bounds the look for secrets in one text file, and the
// wait for a turn to look: text made to be slow to look at (a
// credential-like value on every line) is refused rather than let take a
// core for minutes.
const MaxRedaction = 20 * time.Second

// Redactions is how many text files a process looks at for secrets at
// once; each person has one at a time of them.
const Redactions = 2

// redactions are the turns to look at a text file, and whose file each is.
type redactions struct {
	once  sync.Once
	slots chan struct{}
	busy  sync.Map // sender → struct{}
}

// redact is a text file's content with its secrets redacted, looked at
// within MaxRedaction of a turn, itself within MaxRedaction.
func (s *Service) redact(ctx context.Context, by, name, text string) (string, []string, error) {
	r := &s.redactions
	r.once.Do(func() { r.slots = make(chan struct{}, Redactions) })
	if _, mine := r.busy.LoadOrStore(by, struct{}{}); mine {
		return "", nil, fmt.Errorf("%w: %s: another text file of yours is being checked for secrets: send this one once it is done", errdefs.ErrUnavailable, name)
	}
	defer r.busy.Delete(by)
	wait, cancel := context.WithTimeout(ctx, MaxRedaction)
	defer cancel()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-wait.Done():
		return "", nil, fmt.Errorf("%w: %s: other files are being checked for secrets: send it again in a moment", errdefs.ErrUnavailable, name)
	}
	work, cancel := context.WithTimeout(ctx, MaxRedaction)
	defer cancel()
	out, rules, err := secret.RedactWithin(work, text)
	switch {
	case errors.Is(err, secret.ErrUnbroken):
		return "", nil, fmt.Errorf("%w: %s: its text has %w, which cannot be checked for secrets: break its lines, or send it as an archive where the server allows them", errdefs.ErrTooLarge, name, err)
	case err != nil:
		return "", nil, fmt.Errorf("%w: %s: its text could not be checked for secrets within %s: send a smaller file, or split it", errdefs.ErrTooLarge, name, MaxRedaction)
	}
	return out, rules, nil
}

// Binding is what a message's attachments become once checked: the
// references it carries (named as they will be in a new session), the
// attachments to bind to its session, in order.
type Binding struct {
	Refs []session.AttachmentRef
	ids  []string
}

// Message is a message naming attachments, to check.
type Message struct {
	Project string
	// Session is the message's session ("": one being created).
	Session string
	By      session.Sender
	// Model is the model the message goes to.
	Model string
	Refs  []session.AttachmentRef
	// Retry says a session is created under an idempotency key: its
	// sender's attachments may be bound already, to the session the key
	// names (which binds nothing again).
	Retry bool
}

// Resolve checks the attachments message m names: each uploaded by its
// sender to its project and not sent with another session's message (or
// already its session's), of a kind its model takes, the session's
// attachments within attachment.MaxSession (Bind checks again, with the
// names they take, in one transaction).
func (s *Service) Resolve(ctx context.Context, m Message) (Binding, error) {
	project, sessionID, refs := m.Project, m.Session, m.Refs
	if len(refs) == 0 {
		return Binding{}, nil
	}
	if s == nil {
		return Binding{}, fmt.Errorf("%w: attachments: this server takes none", errdefs.ErrInvalid)
	}
	if len(refs) > session.MaxAttachments {
		return Binding{}, fmt.Errorf("%w: attachments: %d, at most %d per message", errdefs.ErrInvalid, len(refs), session.MaxAttachments)
	}
	have, err := s.Store.SessionAttachments(ctx, sessionID)
	if err != nil {
		return Binding{}, err
	}
	taken, total := map[string]bool{}, int64(0)
	for _, a := range have {
		taken[a.Name], total = true, total+a.Size
	}
	var b Binding
	for i, r := range refs {
		a, err := s.Store.Attachment(ctx, r.ID)
		switch {
		case errors.Is(err, errdefs.ErrNotFound) || err == nil && (a.Project != project || a.SessionID == "" && a.CreatedBy != m.By.String()):
			return Binding{}, fmt.Errorf("%w: payload.attachments[%d]: no attachment %q of yours in project %s: upload the file first (POST /v1/projects/%s/attachments) and name the ID it returns",
				errdefs.ErrInvalid, i, clip.String(r.ID, 64), project, project)
		case err != nil:
			return Binding{}, err
		case a.SessionID != "" && a.SessionID != sessionID && !(sessionID == "" && m.Retry && a.CreatedBy == m.By.String()):
			return Binding{}, fmt.Errorf("%w: payload.attachments[%d]: attachment %s was sent with another session's message: upload the file again for this one", errdefs.ErrInvalid, i, a.ID)
		case slices.Contains(b.ids, a.ID):
			return Binding{}, fmt.Errorf("%w: payload.attachments[%d]: attachment %s is named twice", errdefs.ErrInvalid, i, a.ID)
		}
		if err := provider.Input(m.Model, a.Kind); err != nil {
			return Binding{}, fmt.Errorf("%w: payload.attachments[%d] (%s): %w", errdefs.ErrInvalid, i, a.Name, err)
		}
		if a.SessionID == "" {
			a.Name, total = attachment.Unique(a.Name, taken), total+a.Size
		}
		b.ids = append(b.ids, a.ID)
		b.Refs = append(b.Refs, a.AttachmentRef)
		b.Refs[i].ID = a.ID
	}
	if total > attachment.MaxSession {
		return Binding{}, fmt.Errorf("%w: the session's attachments would hold %s, at most %s", errdefs.ErrTooLarge, clip.Bytes(total), clip.Bytes(attachment.MaxSession))
	}
	return b, nil
}

// Bind binds a resolved message's attachments to its session, and says
// what the message names: each as bound (a new one named apart from the
// session's others).
func (s *Service) Bind(ctx context.Context, sessionID string, b Binding) ([]session.AttachmentRef, error) {
	if s == nil || len(b.ids) == 0 {
		return nil, nil
	}
	bound, err := s.Store.BindAttachments(ctx, sessionID, b.ids, attachment.MaxSession)
	if errors.Is(err, errdefs.ErrTooLarge) {
		return nil, fmt.Errorf("%w: the session's attachments would hold more than %s", errdefs.ErrTooLarge, clip.Bytes(attachment.MaxSession))
	}
	refs := make([]session.AttachmentRef, len(bound))
	for i, a := range bound {
		refs[i] = a.AttachmentRef
		refs[i].ID = a.ID
	}
	return refs, err
}

// List is a session's attachments, for one who may read it.
func (s *Service) List(ctx context.Context, p identity.Principal, sessionID string) ([]session.Attachment, error) {
	if _, err := s.Sessions.For(ctx, p, sessionID, identity.Read); err != nil {
		return nil, err
	}
	return s.Store.SessionAttachments(ctx, sessionID)
}

// Open is one of a session's attachments and its content, for one who
// may read the session.
func (s *Service) Open(ctx context.Context, p identity.Principal, sessionID, id string) (session.Attachment, []byte, error) {
	if _, err := s.Sessions.For(ctx, p, sessionID, identity.Read); err != nil {
		return session.Attachment{}, nil, err
	}
	a, err := s.Store.Attachment(ctx, id)
	if err == nil && a.SessionID != sessionID {
		err = fmt.Errorf("attachment %q: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return a, nil, err
	}
	data, err := s.content(ctx, a.Digest)
	return a, data, err
}

// content opens the content of a digest.
func (s *Service) content(ctx context.Context, digest string) ([]byte, error) {
	sealed, err := s.Store.AttachmentContent(ctx, digest)
	if err != nil {
		return nil, err
	}
	data, err := s.Key.Decrypt(sealed, contentAD(digest))
	if err != nil {
		return nil, fmt.Errorf("attachment content %s: %w", clip.ID(digest), err)
	}
	return data, nil
}

// Collect forgets a collected session's attachments; Expire the staged
// ones no message named within attachment.StagedFor. (A platform without
// attachments has none.)
func (s *Service) Collect(ctx context.Context, sessionID string) (int64, error) {
	if s == nil {
		return 0, nil
	}
	return s.Store.DeleteAttachments(ctx, sessionID)
}

func (s *Service) Expire(ctx context.Context) (int64, error) {
	if s == nil {
		return 0, nil
	}
	return s.Store.ExpireAttachments(ctx, s.now().Add(-attachment.StagedFor))
}
