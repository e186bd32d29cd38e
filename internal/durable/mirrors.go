package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Mirrors fetch the remote repositories sessions work on (package
// mirror).
type Mirrors interface {
	Resolve(ctx context.Context, src mirror.Source, ref string) (commit string, took time.Duration, err error)
	Mirror(ctx context.Context, src mirror.Source, ref, commit string) (string, error)
	Deliver(ctx context.Context, src mirror.Source, commit, branch string, write func(dir string) error) error
	IsBranch(ctx context.Context, src mirror.Source, name string) bool
	Collect(keep func(project, connection string) bool) ([]mirror.Collected, error)
}

// ConnectionAD binds a connection's sealed credential to the connection.
func ConnectionAD(project, name string) []byte {
	return []byte("paddock-connection-v1\n" + project + "\n" + name)
}

// RemoteSource is what fetching r, a remote repository of project, takes:
// its connection, live, and the connection's credential opened. A revoked
// connection fetches nothing more (errdefs.ErrDenied).
func RemoteSource(ctx context.Context, st store.Connections, key Cipher, project string, r session.Remote) (mirror.Source, error) {
	c, sealed, err := st.Connection(ctx, project, r.Connection)
	if err != nil {
		return mirror.Source{}, err
	}
	if !c.Live() {
		return mirror.Source{}, fmt.Errorf("%w: connection %s of project %s was revoked by %s: it fetches nothing more", errdefs.ErrDenied, c.Name, project, c.RevokedBy)
	}
	// The name may have been given since to another connection: it serves
	// only if it still points where the session's repository is and still
	// grants it, or its credential would go to another host.
	if base, err := forge.ParseBase(c.URL); err != nil || r.URL != base.String()+"/"+r.Path || !c.Grants(r.Path) {
		return mirror.Source{}, fmt.Errorf("%w: connection %s of project %s no longer grants %s (it was revoked and given again, elsewhere or narrower)", errdefs.ErrDenied, c.Name, project, r.URL)
	}
	cred, err := key.Decrypt(sealed, ConnectionAD(project, c.Name))
	if err != nil {
		return mirror.Source{}, fmt.Errorf("connection %s's credential cannot be opened: %w", c.Name, err)
	}
	return mirror.Source{Project: project, Connection: c, Repository: forge.Repository{Connection: c.Name, URL: r.URL, Path: r.Path}, Credential: cred}, nil
}

// cloneRemote makes session s's copy at dir from its remote repository,
// at the commit its ref resolved to when it was created: from this
// node's mirror, fetched first when it lacks the commit.
func (a *Activities) cloneRemote(ctx context.Context, s session.Session, dir string) (string, error) {
	if a.Mirrors == nil {
		return "", nonRetryable(fmt.Errorf("this server fetches no remote repositories (its sandbox is unavailable)"))
	}
	src, err := RemoteSource(ctx, a.Store, a.ContentKey, s.Project, *s.Remote)
	if err != nil {
		return "", nonRetryable(err)
	}
	from, err := a.Mirrors.Mirror(ctx, src, s.Remote.Ref, s.Remote.Commit)
	switch {
	case errors.Is(err, mirror.ErrUnreachable):
		return "", err // the forge may answer again: Temporal tries again
	case err != nil:
		return "", nonRetryable(err)
	}
	if err := workspace.CloneAt(ctx, from, s.Remote.Commit, dir); err != nil {
		return "", err
	}
	what := s.Remote.URL
	if s.Remote.Ref != "" {
		what += " at " + s.Remote.Ref
	}
	return what + " (" + clip.ID(s.Remote.Commit) + ")", nil
}
