package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/paddock-dev/paddock/internal/copies"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// A session's working copy lives on the disk of the node that runs it.
// After every call that may change files, and after an acceptance or a
// rejection, its state relative to the base commit is checkpointed into
// the store: each changed file's bytes kept once, sealed with the content
// key, by the SHA-256 of the plain bytes; an acceptance's snapshot commit
// as a git bundle. A node without the copy (a fresh one, after its
// predecessor was lost) makes it again from the repository, the bundles
// and the last checkpoint before running anything. The per-step history
// follows.

// ensureCopy makes the session's working copy on this node when it is not
// here (its node was lost, or this is a fresh node on the same database):
// from the repository, the bundles of its accepted snapshots and the last
// checkpoint. s is updated with where the copy now is.
func (a *Activities) ensureCopy(ctx context.Context, s *session.Session, sp spec.Agent) error {
	if s.Workdir == "" {
		return nil
	}
	if a.Copies.Mine(*s) {
		if err := a.Copies.Mount(ctx, s.Workdir); err != nil {
			return err
		}
	}
	if a.Copies.Holds(*s) {
		return nil
	}
	if s.Node != "" && s.Node != a.Copies.Node && a.Copies.Alive != nil {
		alive, err := a.Copies.Alive(ctx, s.Node)
		if err != nil {
			return err
		}
		if alive {
			return copies.Elsewhere(s.Node)
		}
	}
	all, err := a.Store.Steps(ctx, s.ID)
	if err != nil {
		return err
	}
	open := func(id, what string) ([]byte, error) {
		sealed, err := a.Store.Blob(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("the working copy is not on this node and its %s is missing from the store: %w", what, err)
		}
		data, err := a.ContentKey.Decrypt(sealed, copies.BlobAD(id))
		if err != nil {
			return nil, fmt.Errorf("the working copy is not on this node and its %s does not open with this node's content key (PADDOCK_ENCRYPTION_KEY): %w", what, err)
		}
		return data, nil
	}
	var bundles [][]byte
	var files []workspace.Change
	from := "its base commit (no call had changed a file)"
	if n := len(all); n > 0 {
		last := all[n-1]
		if last.Base != s.BaseCommit {
			return fmt.Errorf("the working copy is not on this node, and no recorded step has its base %.12s: it cannot be made again faithfully", s.BaseCommit)
		}
		for _, c := range all {
			if c.Bundle != "" {
				b, err := open(c.Bundle, fmt.Sprintf("snapshot of step %d", c.Number))
				if err != nil {
					return err
				}
				bundles = append(bundles, b)
			}
		}
		for _, f := range last.Files {
			c := workspace.Change{Path: f.Path, Mode: f.Mode}
			if f.Mode != "" {
				if c.Data, err = open(f.Blob, fmt.Sprintf("step %d's %s", last.Number, f.Path)); err != nil {
					return err
				}
			}
			files = append(files, c)
		}
		from = fmt.Sprintf("step %d", last.Number)
		if len(last.Skipped) > 0 {
			from += " (without what it could not hold: " + strings.Join(last.Skipped, "; ") + ")"
		}
	}
	dir, err := a.Copies.Dir(ctx, *s, a.runsCommands(sp))
	if err != nil {
		return err
	}
	if err := a.Copies.Clear(dir); err != nil { // what a restore cut short left
		return err
	}
	origin := s.Repo
	if s.Remote != nil {
		origin = "" // its base travels as a bundle
	}
	if err := workspace.Restore(ctx, origin, dir, s.BaseCommit, bundles, files); err != nil {
		return fmt.Errorf("the working copy is not on this node and could not be made again: %w", err)
	}
	if err := a.Copies.Hand(dir); err != nil {
		return err
	}
	here := *s
	here.Workdir, here.Node = dir, a.Copies.Node
	env, err := a.environmentAgain(ctx, here, sp, files)
	if err != nil {
		return fmt.Errorf("the working copy was made again on this node, but not its environment: %w", err)
	}
	if env != "" {
		from += "; " + env
	}
	if err := a.Store.SetWorkspace(ctx, s.ID, a.Copies.Node, dir, s.BaseCommit); err != nil {
		return err
	}
	s.Workdir, s.Node = dir, a.Copies.Node
	data, _ := json.Marshal(session.TextData{Text: "the working copy was not on this node: made again from the repository and " + from})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "restore/" + a.Now().UTC().Format("20060102T150405.000000000"), Data: data})
	return err
}
