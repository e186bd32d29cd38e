package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/store"
)

// testForgeLinks: a person links to a live connection at its address
// (again: replaced); a revoked connection takes none and loses its
// links, so a connection given its name again starts without them.
func testForgeLinks(t *testing.T, s store.Store) {
	require.NoError(t, s.EnsureProject(ctx, "p"))
	c := forge.Connection{Project: "p", Name: "forge", Kind: forge.Gitea, URL: "https://git.example.com", Repositories: []string{"*"}, CreatedBy: "ana"}
	_, err := s.AddConnection(ctx, c, []byte("sealed"))
	require.NoError(t, err)
	l := forge.Link{Project: "p", Connection: "forge", User: "ana", URL: c.URL, Login: "ana-on-gitea"}
	_, _, err = s.ForgeLink(ctx, "p", "forge", "ana")
	require.ErrorIs(t, err, errdefs.ErrNotFound)
	linked, err := s.LinkForge(ctx, l, []byte("ana-1"))
	require.NoError(t, err)
	require.False(t, linked.CreatedAt.IsZero())
	_, err = s.LinkForge(ctx, l, []byte("ana-2"))
	require.NoError(t, err, "linking again replaces")
	got, sealed, err := s.ForgeLink(ctx, "p", "forge", "ana")
	require.NoError(t, err)
	require.Equal(t, []byte("ana-2"), sealed)
	require.Equal(t, "ana-on-gitea", got.Login)
	require.Equal(t, c.URL, got.URL)

	elsewhere := l
	elsewhere.URL = "https://other.example.com"
	_, err = s.LinkForge(ctx, elsewhere, []byte("x"))
	require.ErrorIs(t, err, errdefs.ErrConflict, "the connection is elsewhere")
	none := l
	none.Connection = "none"
	_, err = s.LinkForge(ctx, none, []byte("x"))
	require.ErrorIs(t, err, errdefs.ErrNotFound)

	bo := l
	bo.User = "bo"
	_, err = s.LinkForge(ctx, bo, []byte("bo-1"))
	require.NoError(t, err)
	require.NoError(t, s.UnlinkForge(ctx, "p", "forge", "bo"))
	require.ErrorIs(t, s.UnlinkForge(ctx, "p", "forge", "bo"), errdefs.ErrNotFound)
	_, err = s.LinkForge(ctx, bo, []byte("bo-2"))
	require.NoError(t, err)
	require.NoError(t, s.ForgetForgeLinks(ctx, "other", "bo"))
	_, _, err = s.ForgeLink(ctx, "p", "forge", "bo")
	require.NoError(t, err, "another project's forgetting leaves it")
	require.NoError(t, s.ForgetForgeLinks(ctx, "", "bo"))
	_, _, err = s.ForgeLink(ctx, "p", "forge", "bo")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "a revoked user's links go")
	_, _, err = s.ForgeLink(ctx, "p", "forge", "ana")
	require.NoError(t, err, "another person's stay")

	_, err = s.RevokeConnection(ctx, "p", "forge", "admin")
	require.NoError(t, err)
	_, _, err = s.ForgeLink(ctx, "p", "forge", "ana")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "a revocation deletes the links")
	_, err = s.LinkForge(ctx, l, []byte("ana-3"))
	require.ErrorIs(t, err, errdefs.ErrConflict, "a revoked connection")
	_, err = s.AddConnection(ctx, c, []byte("sealed-again"))
	require.NoError(t, err)
	_, _, err = s.ForgeLink(ctx, "p", "forge", "ana")
	require.ErrorIs(t, err, errdefs.ErrNotFound, "the connection given again has no links")
}
