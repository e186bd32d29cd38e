package mirror

import (
	"context"
	"fmt"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/session"
)

// Connections read a project's connection with its sealed credential
// (the store).
type Connections interface {
	Connection(ctx context.Context, project, name string) (forge.Connection, []byte, error)
}

// Opener opens a sealed credential (the content key).
type Opener interface {
	Decrypt(sealed, ad []byte) ([]byte, error)
}

// ConnectionAD binds a connection's sealed credential to the connection.
func ConnectionAD(project, name string) []byte {
	return []byte("paddock-connection-v1\n" + project + "\n" + name)
}

// SourceOf is what fetching r, a remote repository of project, takes:
// its connection, live, and the connection's credential opened. A revoked
// connection fetches nothing more (errdefs.ErrDenied).
func SourceOf(ctx context.Context, st Connections, key Opener, project string, r session.Remote) (Source, error) {
	c, sealed, err := st.Connection(ctx, project, r.Connection)
	if err != nil {
		return Source{}, err
	}
	if !c.Live() {
		return Source{}, fmt.Errorf("%w: connection %s of project %s was revoked by %s: it fetches nothing more", errdefs.ErrDenied, c.Name, project, c.RevokedBy)
	}
	// The name may have been given since to another connection: it serves
	// only if it still points where the session's repository is and still
	// grants it, or its credential would go to another host.
	if base, err := forge.ParseBase(c.URL); err != nil || r.URL != base.String()+"/"+r.Path || !c.Grants(r.Path) {
		return Source{}, fmt.Errorf("%w: connection %s of project %s no longer grants %s (it was revoked and given again, elsewhere or narrower)", errdefs.ErrDenied, c.Name, project, r.URL)
	}
	cred, err := key.Decrypt(sealed, ConnectionAD(project, c.Name))
	if err != nil {
		return Source{}, fmt.Errorf("connection %s's credential cannot be opened: %w", c.Name, err)
	}
	return Source{Project: project, Connection: c, Repository: forge.Repository{Connection: c.Name, URL: r.URL, Path: r.Path}, Credential: cred}, nil
}
