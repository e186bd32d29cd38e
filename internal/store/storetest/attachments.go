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
	require.NoError(t, s.AddAttachment(ctx, attached("a1", "d1", "user:ann", 10, time.Now()), []byte("sealed-1")))
	require.NoError(t, s.AddAttachment(ctx, attached("a2", "d1", "user:ann", 10, time.Now()), []byte("sealed-1 again")))
	require.NoError(t, s.AddAttachment(ctx, attached("a3", "d3", "user:ann", 30, time.Now()), []byte("sealed-3")))
	require.NoError(t, s.AddAttachment(ctx, attached("a4", "d4", "user:bob", 40, old), []byte("sealed-4")))
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
	n, err := s.StagedAttachmentBytes(ctx, "p", "user:ann")
	require.NoError(t, err)
	require.Equal(t, int64(50), n)

	require.NoError(t, s.BindAttachments(ctx, "s1", map[string]string{"a1": "renamed.txt", "a3": "a3.txt"}))
	require.NoError(t, s.BindAttachments(ctx, "s1", map[string]string{"a1": "again.txt"}), "binding again to the same session")
	err = s.BindAttachments(ctx, "s2", map[string]string{"a2": "a2.txt", "a1": "a1.txt"})
	require.ErrorIs(t, err, errdefs.ErrConflict)
	a, err = s.Attachment(ctx, "a2")
	require.NoError(t, err)
	require.Equal(t, "", a.SessionID, "all or none")
	list, err := s.SessionAttachments(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, list, 2)
	names := []string{list[0].Name, list[1].Name}
	require.ElementsMatch(t, []string{"renamed.txt", "a3.txt"}, names, "named when bound, kept after")
	n, err = s.StagedAttachmentBytes(ctx, "p", "user:ann")
	require.NoError(t, err)
	require.Equal(t, int64(10), n)

	gone, err := s.ExpireAttachments(ctx, time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), gone, "bob's old staged one")
	_, err = s.AttachmentContent(ctx, "d4")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	gone, err = s.DeleteAttachments(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, int64(2), gone)
	_, err = s.AttachmentContent(ctx, "d3")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	_, err = s.AttachmentContent(ctx, "d1")
	require.NoError(t, err, "a2, staged, still names d1")
}
