// Package auditlog keeps the tamper-evident audit log: sessions' logs
// sealed with the server's key, the Merkle tree over every entry, the
// checkpoints published out of the server's reach and cosigned by
// witnesses, and the use cases that read them (verify, prove, export,
// content), each checking its caller.
package auditlog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
)

// Service is the audit log's use cases.
type Service struct {
	Store  store.Store
	Access *access.Service
	Sealer *Sealer
	// ContentKey opens the content projects retain.
	ContentKey Opener
	// RetainFailed is how long a failed session's copy is kept, and
	// SweepEvery how often the sweeper runs: a session ended longer ago
	// than they allow should be sealed.
	RetainFailed, SweepEvery time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Broken, when set, is told of every log a verification found broken.
	Broken func()
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// auditable says which projects' sessions p may audit.
func (s *Service) auditable(ctx context.Context, p identity.Principal) (func(project string) bool, error) {
	within, scoped, err := s.Access.Readable(ctx, p, identity.Audit)
	return func(project string) bool { return !scoped || slices.Contains(within, project) }, err
}

// auditSession is session id, when p may audit it.
func (s *Service) auditSession(ctx context.Context, p identity.Principal, id string) (session.Session, error) {
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return x, err
	}
	return x, s.Access.Allow(ctx, p, x.Project, identity.Audit, fmt.Sprintf("session %q", id))
}
