package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// A session's working copy lives on the disk of the node that runs it.
// After every call that may change files its state relative to the base
// commit is checkpointed into the store (each file's content kept once,
// sealed with the content key, by the SHA-256 of the plain content), so
// that a node without the copy (a fresh one after its predecessor was
// lost) makes it again from the repository at the base plus the last
// checkpoint before running anything. The per-step history follows.

// blobAD binds a sealed blob to its ID: a blob moved under another ID
// does not open.
func blobAD(id string) []byte { return []byte("blob/" + id) }

// checkpoint records the copy's state after call callID; a failure is
// told in the transcript (the session goes on; only a takeover from this
// step would be impossible).
func (a *Activities) checkpoint(ctx context.Context, s session.Session, callID string) {
	if s.Workdir == "" || s.BaseCommit == "" || a.ContentKey == nil {
		return
	}
	err := func() error {
		tree, changes, err := workspace.Changes(ctx, s.Workdir, s.BaseCommit)
		if err != nil {
			return err
		}
		known := map[string]bool{}
		if prev, err := a.Store.Checkpoints(ctx, s.ID); err == nil && len(prev) > 0 {
			for _, f := range prev[len(prev)-1].Files {
				known[f.Blob] = true
			}
		}
		files := make([]store.CheckpointFile, len(changes))
		blobs := map[string][]byte{}
		for i, c := range changes {
			files[i] = store.CheckpointFile{Path: c.Path, Mode: c.Mode}
			if c.Mode == "" {
				continue
			}
			sum := sha256.Sum256(c.Data)
			id := hex.EncodeToString(sum[:])
			files[i].Blob = id
			if !known[id] {
				blobs[id] = a.ContentKey.Encrypt(c.Data, blobAD(id))
			}
		}
		_, _, err = a.Store.SaveCheckpoint(ctx, store.Checkpoint{SessionID: s.ID, Base: s.BaseCommit, Tree: tree, CallID: callID, Files: files}, blobs)
		return err
	}()
	if err != nil {
		data, _ := json.Marshal(session.TextData{Text: "the working copy could not be checkpointed after this call (" + err.Error() + "): should this node be lost, the session could not be taken over from here"})
		_, _ = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "checkpoint/" + callID, Data: data})
	}
}

// ensureCopy makes the session's working copy on this node when it is not
// here (its node was lost, or this is a fresh node on the same database):
// from the repository at the base commit plus the last checkpoint. s is
// updated with where the copy now is.
func (a *Activities) ensureCopy(ctx context.Context, s *session.Session, sp spec.Agent) error {
	if s.Workdir == "" {
		return nil
	}
	if err := a.Copies.Mount(ctx, s.Workdir); err != nil {
		return err
	}
	if _, err := os.Stat(s.Workdir); err == nil {
		return nil
	}
	all, err := a.Store.Checkpoints(ctx, s.ID)
	if err != nil {
		return err
	}
	var changes []workspace.Change
	from := "its base commit (no call had changed a file)"
	if n := len(all); n > 0 && all[n-1].Base == s.BaseCommit {
		last := all[n-1]
		from = fmt.Sprintf("checkpoint %d", last.Step)
		for _, f := range last.Files {
			c := workspace.Change{Path: f.Path, Mode: f.Mode}
			if f.Mode != "" {
				sealed, err := a.Store.Blob(ctx, f.Blob)
				if err != nil {
					return fmt.Errorf("the working copy is not on this node and checkpoint %d lacks %s: %w", last.Step, f.Path, err)
				}
				if c.Data, err = a.ContentKey.Decrypt(sealed, blobAD(f.Blob)); err != nil {
					return fmt.Errorf("the working copy is not on this node and checkpoint %d does not open with this node's content key (PADDOCK_ENCRYPTION_KEY): %w", last.Step, err)
				}
			}
			changes = append(changes, c)
		}
	}
	dir, err := a.Copies.dir(ctx, *s, a.runsCommands(sp))
	if err != nil {
		return err
	}
	_ = os.RemoveAll(dir) // what a restore cut short left
	base, err := workspace.Restore(ctx, s.Repo, dir, s.BaseCommit, changes)
	if err != nil {
		return fmt.Errorf("the working copy is not on this node and could not be made again: %w", err)
	}
	if a.Copies.UID != 0 {
		if err := chownTree(dir, a.Copies.UID); err != nil {
			return fmt.Errorf("hand the restored working copy to the sandbox user: %w", err)
		}
	}
	if err := a.Store.SetWorkspace(ctx, s.ID, dir, base); err != nil {
		return err
	}
	s.Workdir, s.BaseCommit = dir, base
	data, _ := json.Marshal(session.TextData{Text: "the working copy was not on this node: made again from the repository and " + from})
	_, err = a.Store.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "restore/" + a.Now().UTC().Format("20060102T150405.000000000"), Data: data})
	return err
}
