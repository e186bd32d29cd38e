package durable

import (
	"context"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
)

// What the tests of package durable_test (which start the use cases of
// package engine on top of these activities) reach inside.

// EnsureCopy is ensureCopy.
func (a Lifecycle) EnsureCopy(ctx context.Context, s *session.Session, sp spec.Agent) error {
	return a.ensureCopy(ctx, s, sp)
}

// CloneRemote is cloneRemote.
func (a *Activities) CloneRemote(ctx context.Context, s session.Session, dir string) (string, error) {
	return a.cloneRemote(ctx, s, dir)
}
