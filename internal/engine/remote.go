package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/paddock-dev/paddock/internal/durable"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workflows"
)

// Any node answers any request; a delivery (diff, accept, reject) needs
// the session's working copy, so a node that does not hold it hands the
// delivery to the one that does, through Temporal: HandoverWorkflow runs
// the Deliver activity on that node's queue, or, when that node is gone,
// on any node, which makes the copy again first. The copy is then only
// ever read and written on one node at a time, where the in-process
// locks (Copies.Sandboxed, Copies.Quiet) order a delivery against the
// session's own commands.

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
func (s *Service) remote(ctx context.Context, d durable.Handover) (durable.HandoverResult, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteWait)
	defer cancel()
	run, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "delivery-" + uuid.NewString(), TaskQueue: workflows.TaskQueue, WorkflowExecutionTimeout: remoteWait,
	}, workflows.HandoverName, d)
	if err != nil {
		return durable.HandoverResult{}, fmt.Errorf("hand the %s to the node holding session %s's working copy: %w", d.Op, d.SessionID, err)
	}
	var out durable.HandoverResult
	if err := run.Get(ctx, &out); err != nil {
		if kinded := durable.Unkinded(err); kinded != nil {
			return out, kinded
		}
		return out, fmt.Errorf("the %s on the node holding session %s's working copy: %w", d.Op, d.SessionID, err)
	}
	return out, nil
}

// Here is the work on this node's copies that other nodes hand over
// (the Deliver activity runs it on the node holding the copy).
func (s *Service) Here() durable.CopyWork { return here{s} }

type here struct{ s *Service }

func (h here) Diff(ctx context.Context, x session.Session) (session.Diff, session.Session, error) {
	return h.s.diffHere(ctx, x)
}

func (h here) Accept(ctx context.Context, id string, req wire.AcceptRequest, by session.Sender) (session.Session, error) {
	return h.s.accept(ctx, id, req, by, nil)
}

func (h here) Branch(ctx context.Context, id, base, tree string, by session.Sender) (string, string, error) {
	return h.s.acceptToBranch(ctx, id, base, tree, by)
}

func (h here) Reject(ctx context.Context, id string, by session.Sender) (session.Session, error) {
	return h.s.reject(ctx, id, by)
}
