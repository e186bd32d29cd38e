package attachdesk

import (
	"context"

	"github.com/paddock-dev/paddock/internal/attachment"
	"github.com/paddock-dev/paddock/internal/provider"
	"github.com/paddock-dev/paddock/internal/session"
)

// Give readies a model step's conversation: every attachment of session
// x placed in its working copy (when it has one), and, for each model
// tried, the conversation with each message's attachments as that model
// takes them: images and PDF as content where it takes them (else a note
// of where they are), text inline, other files a note.
func (s *Service) Give(ctx context.Context, x session.Session, msgs []provider.Message) (func(model string) []provider.Message, error) {
	same := func(string) []provider.Message { return msgs }
	if s == nil {
		return same, nil
	}
	// The content read is what the conversation gives the model and what
	// the copy lacks: a file already in place is not read again.
	want := map[string]bool{}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			want[a.Digest] = want[a.Digest] || a.Kind != session.AttachmentFile
		}
	}
	all, err := s.Store.SessionAttachments(ctx, x.ID)
	if err != nil || len(all) == 0 && len(want) == 0 {
		return same, err
	}
	sizes := map[string]int64{}
	for _, a := range all {
		sizes[a.Name] = a.Size
	}
	stale := map[string]bool{}
	if x.Workdir != "" {
		for _, name := range attachment.Stale(x.Workdir, sizes) {
			stale[name] = true
		}
	}
	data := map[string][]byte{}
	var files []attachment.File
	for _, a := range all {
		if (want[a.Digest] || stale[a.Name]) && data[a.Digest] == nil {
			if data[a.Digest], err = s.content(ctx, a.Digest); err != nil {
				return nil, err
			}
		}
		if stale[a.Name] {
			files = append(files, attachment.File{Name: a.Name, Data: data[a.Digest]})
		}
	}
	// A copy the session made unfit for them (a directory of its own
	// where a file goes) goes without: the model has their content.
	_ = attachment.Place(x.Workdir, files)
	return func(model string) []provider.Message {
		out := make([]provider.Message, len(msgs))
		for i, m := range msgs {
			out[i] = m
			out[i].Attachments = make([]provider.Attachment, len(m.Attachments))
			for j, a := range m.Attachments {
				out[i].Attachments[j] = given(model, a.AttachmentRef, data[a.Digest])
			}
		}
		return out
	}, nil
}

// given is one attachment as model takes it.
func given(model string, r session.AttachmentRef, data []byte) provider.Attachment {
	a := provider.Attachment{AttachmentRef: r}
	switch err := provider.Input(model, r.Kind); {
	case data == nil:
		a.Text = attachment.Note(r, "its content is no longer kept")
	case r.Kind == session.AttachmentText:
		a.Text = attachment.Inline(r, data)
	case r.Kind == session.AttachmentFile:
		a.Text = attachment.Note(r, "")
	case err != nil:
		a.Text = attachment.Note(r, err.Error())
	default:
		a.Text, a.Data = attachment.Note(r, ""), data
	}
	return a
}
