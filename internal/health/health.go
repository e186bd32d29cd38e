// Package health is a node's and its cluster's health at a glance, for
// the server's administrators (paddock status, GET /v1/status).
package health

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Census counts what the deployment holds (the store's Census).
type Census interface {
	Census(ctx context.Context) (store.Census, error)
}

// Service reads a node's health.
type Service struct {
	Store Census
	// Node names this node, Version its program; DataDir is its data
	// directory.
	Node, Version, DataDir string
	// QueueLag, when set, is this node's Temporal queue lag at the 99th
	// percentile (false: none measured yet).
	QueueLag func() (time.Duration, bool)
}

// Status is this node's and its cluster's health, for the server's
// administrators: nodes, sessions by status, parks, approvals waiting,
// this node's queue lag and its data directory's disk.
func (s *Service) Status(ctx context.Context, caller identity.Principal) (wire.Status, error) {
	if err := access.MustAdmin(caller, "reading the server's status"); err != nil {
		return wire.Status{}, err
	}
	c, err := s.Store.Census(ctx)
	if err != nil {
		return wire.Status{}, err
	}
	out := wire.Status{Node: s.Node, Version: s.Version, Nodes: c.Nodes, Sessions: c.Sessions, Parked: c.Parked, ApprovalsWaiting: c.Approvals, QueueLagMs: -1,
		Disk: wire.Disk{Path: s.DataDir}}
	if !c.OldestApproval.IsZero() {
		out.OldestApprovalSeconds = int64(time.Since(c.OldestApproval).Seconds())
	}
	if s.QueueLag != nil {
		if lag, ok := s.QueueLag(); ok {
			out.QueueLagMs = lag.Milliseconds()
		}
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(s.DataDir, &fs); err != nil {
		return out, fmt.Errorf("the data directory's disk: %w", err)
	}
	out.Disk.TotalBytes = int64(fs.Blocks) * fs.Bsize
	out.Disk.FreeBytes = int64(fs.Bavail) * fs.Bsize
	out.Disk.UsedBytes = out.Disk.TotalBytes - int64(fs.Bfree)*fs.Bsize
	return out, nil
}
