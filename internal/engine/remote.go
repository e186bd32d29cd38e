package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Any node answers any request; a delivery (diff, accept, reject) needs
// the session's working copy, so a node that does not hold it hands the
// delivery to the one that does, through Temporal: DeliveryWorkflow runs
// the Deliver activity on that node's queue, or, when that node is gone,
// on any node, which makes the copy again first. The copy is then only
// ever read and written on one node at a time, where the in-process
// locks (Copies.Sandboxed, Copies.Quiet) order a delivery against the
// session's own commands.

// Delivery is a delivery handed to the node holding the copy.
type Delivery struct {
	Op        string             `json:"op"`
	SessionID string             `json:"sessionId"`
	Home      string             `json:"home"`
	Accept    wire.AcceptRequest `json:"accept,omitzero"`
	By        session.Sender     `json:"by,omitzero"`
}

// Delivered is what a delivery returns.
type Delivered struct {
	Diff    session.Diff    `json:"diff,omitzero"`
	Session session.Session `json:"session,omitzero"`
	Branch  string          `json:"branch,omitempty"`
	Commit  string          `json:"commit,omitempty"`
}

const (
	opDiff   = "diff"
	opAccept = "accept"
	opBranch = "branch"
	opReject = "reject"
)

// elsewhere says another node holds session x's working copy.
func (s *Service) elsewhere(x session.Session) bool {
	return x.Node != "" && s.Copies != nil && x.Node != s.Copies.Node && s.Temporal != nil
}

// remoteWait bounds a delivery handed to another node: the home's wait,
// the copy made again elsewhere, and the delivery itself.
const remoteWait = 2 * time.Minute

// remote runs d on the node holding the copy and returns its outcome,
// its error of the same kind (invalid, not found, conflict) as if it ran
// here.
func (s *Service) remote(ctx context.Context, d Delivery) (Delivered, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteWait)
	defer cancel()
	run, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "delivery-" + uuid.NewString(), TaskQueue: TaskQueue, WorkflowExecutionTimeout: remoteWait,
	}, DeliveryWorkflow, d)
	if err != nil {
		return Delivered{}, fmt.Errorf("hand the %s to the node holding session %s's working copy: %w", d.Op, d.SessionID, err)
	}
	var out Delivered
	if err := run.Get(ctx, &out); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			for _, k := range errorKinds {
				if app.Type() == k.name {
					return out, fmt.Errorf("%w: %s", k.err, app.Message())
				}
			}
			return out, errors.New(app.Message())
		}
		return out, fmt.Errorf("the %s on the node holding session %s's working copy: %w", d.Op, d.SessionID, err)
	}
	return out, nil
}

// errorKinds carry an error's kind across nodes.
var errorKinds = []struct {
	name string
	err  error
}{{"invalid", errdefs.ErrInvalid}, {"not_found", errdefs.ErrNotFound}, {"conflict", errdefs.ErrConflict}, {"denied", errdefs.ErrDenied}}

// DeliveryWorkflow runs one delivery on the node holding the copy.
func DeliveryWorkflow(ctx workflow.Context, d Delivery) (Delivered, error) {
	w := &run{home: d.Home}
	var out Delivered
	err := w.onCopy(short(ctx, 3), act.Deliver, d).Get(ctx, &out)
	return out, err
}

// Deliver runs a delivery here, making the copy here first when it is
// not (its node is gone).
func (a *Activities) Deliver(ctx context.Context, d Delivery) (Delivered, error) {
	s, sp, err := a.agentSpec(ctx, d.SessionID)
	if err != nil {
		return Delivered{}, kinded(err)
	}
	if s.Workdir != "" && s.BaseCommit != "" && (s.Status != session.StatusStopped || s.Held()) {
		if err := a.ensureCopy(ctx, &s, sp); err != nil {
			return Delivered{}, kinded(err)
		}
	}
	var out Delivered
	switch d.Op {
	case opDiff:
		out.Diff, out.Session, err = a.Deliveries.diffHere(ctx, s)
	case opAccept:
		out.Session, err = a.Deliveries.accept(ctx, d.SessionID, d.Accept, d.By, nil)
	case opBranch:
		out.Branch, out.Commit, err = a.Deliveries.acceptToBranch(ctx, d.SessionID, d.Accept.Base, d.Accept.Tree, d.By)
	case opReject:
		out.Session, err = a.Deliveries.reject(ctx, d.SessionID, d.By)
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
