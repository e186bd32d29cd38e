package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
	"go.temporal.io/sdk/temporal"
)

// Handover is work on a session's working copy (the diff, accept, reject)
// handed to the node holding the copy.
type Handover struct {
	Op        string             `json:"op"`
	SessionID string             `json:"sessionId"`
	Home      string             `json:"home"`
	Accept    wire.AcceptRequest `json:"accept,omitzero"`
	By        session.Sender     `json:"by,omitzero"`
}

// HandoverResult is what a hand-over returns.
type HandoverResult struct {
	Diff    session.Diff    `json:"diff,omitzero"`
	Session session.Session `json:"session,omitzero"`
	Branch  string          `json:"branch,omitempty"`
	Commit  string          `json:"commit,omitempty"`
}

const (
	OpDiff   = "diff"
	OpAccept = "accept"
	OpBranch = "branch"
	OpReject = "reject"
)

// errorKinds carry an error's kind across nodes.
var errorKinds = []struct {
	name string
	err  error
}{{"invalid", errdefs.ErrInvalid}, {"not_found", errdefs.ErrNotFound}, {"conflict", errdefs.ErrConflict}, {"denied", errdefs.ErrDenied}}

// Deliver runs a hand-over here, making the copy here first when it is
// not (its node is gone). Temporal knows it as "Deliver", the name
// recorded histories use.
func (a Lifecycle) Deliver(ctx context.Context, d Handover) (HandoverResult, error) {
	s, sp, err := a.agentSpec(ctx, d.SessionID)
	if err != nil {
		return HandoverResult{}, kinded(err)
	}
	if s.Workdir != "" && s.BaseCommit != "" && (s.Status != session.StatusStopped || s.Held()) {
		if err := a.ensureCopy(ctx, &s, sp); err != nil {
			return HandoverResult{}, kinded(err)
		}
	}
	var out HandoverResult
	switch d.Op {
	case OpDiff:
		out.Diff, out.Session, err = a.Here.Diff(ctx, s)
	case OpAccept:
		out.Session, err = a.Here.Accept(ctx, d.SessionID, d.Accept, d.By)
	case OpBranch:
		out.Branch, out.Commit, err = a.Here.Branch(ctx, d.SessionID, d.Accept.Base, d.Accept.Tree, d.By)
	case OpReject:
		out.Session, err = a.Here.Reject(ctx, d.SessionID, d.By)
	default:
		err = fmt.Errorf("%w: no delivery %q", errdefs.ErrInvalid, d.Op)
	}
	return out, kinded(err)
}

// kinded makes an error of a known kind a final one that says its kind.
func kinded(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return temporal.NewNonRetryableApplicationError(err.Error(), k.name, nil)
		}
	}
	return err
}

// CopyWork is the work on a session's copy that only the node holding it
// does (the use cases' side of a hand-over: engine.Service.Here).
type CopyWork interface {
	Diff(ctx context.Context, x session.Session) (session.Diff, session.Session, error)
	Accept(ctx context.Context, id string, req wire.AcceptRequest, by session.Sender) (session.Session, error)
	Branch(ctx context.Context, id, base, tree string, by session.Sender) (branch, commit string, err error)
	Reject(ctx context.Context, id string, by session.Sender) (session.Session, error)
}

// Unkinded is the error a hand-over failed with, as the node that ran it
// had it (its kind restored: invalid, not found, conflict, denied); nil
// when err is no such error (the hand-over itself failed).
func Unkinded(err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return nil
	}
	for _, k := range errorKinds {
		if app.Type() == k.name {
			return fmt.Errorf("%w: %s", k.err, app.Message())
		}
	}
	return errors.New(app.Message())
}
