package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/mirror"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// Mirrors fetch the remote repositories sessions work on (package
// mirror).
type Mirrors interface {
	Mirror(ctx context.Context, src mirror.Source, ref, commit string) (string, error)
}

// cloneRemote makes session s's copy at dir from its remote repository,
// at the commit its ref resolved to when it was created: from this
// node's mirror, fetched first when it lacks the commit.
func (a *Activities) cloneRemote(ctx context.Context, s session.Session, dir string) (string, error) {
	if a.Mirrors == nil {
		return "", nonRetryable(fmt.Errorf("this server fetches no remote repositories (its sandbox is unavailable)"))
	}
	src, err := mirror.SourceOf(ctx, a.Store, a.ContentKey, s.Project, *s.Remote)
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
