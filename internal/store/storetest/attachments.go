package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

func attached(id, digest, by string, size int64, at time.Time) session.Attachment {
	return session.Attachment{ID: id, Project: "p", CreatedBy: by, CreatedAt: at,
		AttachmentRef: session.AttachmentRef{Name: id + ".txt", Kind: session.AttachmentText, Type: "text/plain", Size: size, Digest: digest}}
}

// testAttachments: content is kept once per digest; a staged attachment
// is bound to one session, all of a message's or none; a session's go
// with it, staged ones when they expire, and content no attachment
// names with the last that did.
func testAttachments(t *testing.T, s store.Store) {
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, s.AddAttachment(ctx, attached("a1", "d1", "user:ann", 10, time.Now()), []byte("sealed-1"), 100))
	require.NoError(t, s.AddAttachment(ctx, attached("a2", "d1", "user:ann", 10, time.Now()), []byte("sealed-1 again"), 100))
	require.NoError(t, s.AddAttachment(ctx, attached("a3", "d3", "user:ann", 30, time.Now()), []byte("sealed-3"), 100))
	require.NoError(t, s.AddAttachment(ctx, attached("a4", "d4", "user:bob", 40, old), []byte("sealed-4"), 100))
	err := s.AddAttachment(ctx, attached("a5", "d5", "user:ann", 51, time.Now()), []byte("sealed-5"), 100)
	require.ErrorIs(t, err, errdefs.ErrTooLarge, "ann's staged ones would hold 101 bytes")
	_, err = s.AttachmentContent(ctx, "d5")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "nothing of the refused one is kept")
	sealed, err := s.AttachmentContent(ctx, "d1")
	require.NoError(t, err)
	require.Equal(t, "sealed-1", string(sealed), "kept once: the first content of a digest stands")
	a, err := s.Attachment(ctx, "a3")
	require.NoError(t, err)
	require.Equal(t, "", a.SessionID)
	require.Equal(t, session.AttachmentText, a.Kind)
	require.Equal(t, int64(30), a.Size)
	_, err = s.Attachment(ctx, "nope")
	require.ErrorIs(t, err, errdefs.ErrNotFound)

	bound, err := s.BindAttachments(ctx, "s1", []string{"a1", "a3"}, 100)
	require.NoError(t, err)
	require.Equal(t, []string{"a1.txt", "a3.txt"}, []string{bound[0].Name, bound[1].Name})
	require.Equal(t, "s1", bound[0].SessionID)
	_, err = s.BindAttachments(ctx, "s1", []string{"a1"}, 100)
	require.NoError(t, err, "binding again to the same session")
	_, err = s.BindAttachments(ctx, "s2", []string{"a2", "a1"}, 100)
	require.ErrorIs(t, err, errdefs.ErrConflict)
	a, err = s.Attachment(ctx, "a2")
	require.NoError(t, err)
	require.Equal(t, "", a.SessionID, "all or none")
	// Another a1.txt in the session takes another name.
	same := attached("a6", "d6", "user:ann", 5, time.Now())
	same.Name = "a1.txt"
	require.NoError(t, s.AddAttachment(ctx, same, []byte("sealed-6"), 100))
	_, err = s.BindAttachments(ctx, "s1", []string{"a2", "a6"}, 50)
	require.ErrorIs(t, err, errdefs.ErrTooLarge, "the session would hold 55 bytes")
	a, err = s.Attachment(ctx, "a6")
	require.NoError(t, err)
	require.Equal(t, "", a.SessionID, "none bound")
	bound, err = s.BindAttachments(ctx, "s1", []string{"a6"}, 100)
	require.NoError(t, err)
	require.Equal(t, "a1-2.txt", bound[0].Name)
	list, err := s.SessionAttachments(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, list, 3)

	gone, err := s.ExpireAttachments(ctx, time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), gone, "bob's old staged one")
	_, err = s.AttachmentContent(ctx, "d4")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	gone, err = s.DeleteAttachments(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, int64(3), gone)
	_, err = s.AttachmentContent(ctx, "d3")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	_, err = s.AttachmentContent(ctx, "d1")
	require.NoError(t, err, "a2, staged, still names d1")
}
