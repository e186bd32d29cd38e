package engine

import (
	"context"
	"fmt"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/policy"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workflows"
)

// Child is what a delegated session is made with beyond a create
// request: its agent as the delegating session narrowed it, the policy it
// can only tighten (the delegating session's pinned one), the delegating
// session, and the credentials it was given (sealed for it).
type Child struct {
	Spec        spec.Agent
	Floor       *policy.Policy
	From        session.Session
	Credentials map[string][]byte
}

// Create starts a session for by, an agent acting for its session's
// requester (a delegated one when child is set). It checks no caller:
// package agency checks the requester the agent acts for.
func (s Platform) Create(ctx context.Context, req wire.CreateRequest, by session.Sender, child *Child) (session.Session, error) {
	return s.create(ctx, req, by, child)
}

// Send records a command from by and wakes its session, checking no
// caller (as Create).
func (s Platform) Send(ctx context.Context, id string, req wire.SendRequest, by session.Sender) (session.Command, error) {
	if err := callerKey(req.IdempotencyKey, by); err != nil {
		return session.Command{}, err
	}
	return s.send(ctx, id, req, by)
}

// inherit gives session to the credentials of session from, sealed for it.
func (s *Service) inherit(ctx context.Context, from, to string, sealed map[string][]byte) error {
	out := make(map[string][]byte, len(sealed))
	for name, v := range sealed {
		plain, err := s.ContentKey.Decrypt(v, durable.CredentialAD(from, name))
		if err != nil {
			return fmt.Errorf("credential %s of session %s cannot be opened: %w", name, from, err)
		}
		out[name] = s.ContentKey.Encrypt(plain, durable.CredentialAD(to, name))
	}
	return s.Store.SetCredentials(ctx, to, out)
}

// Wake wakes session id's workflow for command commandID, recorded by
// the platform (a delegated session's stop).
func (s Platform) Wake(ctx context.Context, id, commandID string, kind session.CommandKind) error {
	return s.notify(ctx, id, workflows.Notice{CommandID: commandID, Kind: kind})
}

// Returned tells session id's workflow that child, a session it
// delegated, settled a turn or ended.
func (s Platform) Returned(ctx context.Context, id, child string) error {
	return s.Temporal.SignalWorkflow(ctx, session.WorkflowID(id), "", workflows.SignalChild, child)
}
