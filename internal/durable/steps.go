package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
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

// blobAD binds a sealed blob to its ID: a blob moved under another ID
// does not open.
func blobAD(id string) []byte { return []byte("blob/" + id) }

// blobID names content by the SHA-256 of its plain bytes.
func blobID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CopyWorkTimeout bounds the host's work of checkpointing a copy after a
// call.
const CopyWorkTimeout = 2 * time.Minute

// RecordStep checkpoints the copy of s after callID (a call's ID, or
// "accept"/"reject"); prevBase, when the base just moved from it, makes
// the checkpoint carry the bundle of the new base. A failure is told in
// the transcript: the session goes on, only a takeover from here would
// not be faithful.
func RecordStep(ctx context.Context, st store.Store, key Cipher, s session.Session, callID, prevBase string) {
	if s.Workdir == "" || s.BaseCommit == "" || key == nil {
		return
	}
	// The host's work on the copy is bounded: a copy the session filled
	// beyond what the host can record in that time is not checkpointed.
	ctx, cancel := context.WithTimeout(ctx, CopyWorkTimeout)
	defer cancel()
	var skipped []string
	err := func() error {
		// Only the holder's copy is checkpointed: one another node took
		// over (this one was thought gone) must not overwrite its history.
		if cur, err := st.GetSession(ctx, s.ID); err != nil {
			return err
		} else if cur.Node != s.Node {
			return fmt.Errorf("node %s holds the working copy now", cur.Node)
		}
		state, err := workspace.Capture(ctx, s.Workdir, s.BaseCommit)
		if err != nil {
			return err
		}
		skipped = state.Skipped
		last, err := st.LastStep(ctx, s.ID)
		first := errors.Is(err, errdefs.ErrNotFound)
		if err != nil && !first {
			return err
		}
		known := map[string]bool{}
		for _, f := range last.Files {
			known[f.Blob] = true
		}
		blobs := map[string][]byte{}
		c := session.Step{SessionID: s.ID, Base: s.BaseCommit, Tree: state.Tree, CallID: callID, Skipped: state.Skipped,
			Files: make([]session.StepFile, len(state.Files))}
		for i, f := range state.Files {
			c.Files[i] = session.StepFile{Path: f.Path, Mode: f.Mode}
			if f.Mode == "" {
				continue
			}
			id := blobID(f.Data)
			c.Files[i].Blob = id
			if !known[id] {
				blobs[id] = key.Encrypt(f.Data, blobAD(id))
			}
		}
		// A base the repository of origin lacks travels as a bundle: the
		// snapshot of an acceptance, or the first commit of a copy made
		// without a repository.
		from, bundled := "", first && s.Repo == ""
		if prevBase != "" && prevBase != s.BaseCommit {
			from, bundled = prevBase, true
		}
		if bundled {
			b, err := workspace.BaseBundle(ctx, s.Workdir, s.BaseCommit, from)
			if err != nil {
				return err
			}
			c.Bundle = blobID(b)
			blobs[c.Bundle] = key.Encrypt(b, blobAD(c.Bundle))
		}
		_, _, err = st.SaveStep(ctx, c, blobs)
		return err
	}()
	text := ""
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		text = fmt.Sprintf("the working copy's state was not recorded: recording its files took longer than %s (remove generated files the session does not need); should this node be lost, the session could not be taken over faithfully from here", CopyWorkTimeout)
	case err != nil:
		text = "the working copy's state could not be recorded (" + err.Error() + "): should this node be lost, the session could not be taken over faithfully from here"
	case len(skipped) > 0:
		text = "left out of the working copy's recorded state (a node taking the session over would not have them): " + strings.Join(skipped, "; ")
	default:
		return
	}
	data, _ := json.Marshal(session.TextData{Text: text})
	_, _ = st.AppendEvent(ctx, session.Event{SessionID: s.ID, Kind: session.EventNotice, Key: "checkpoint/" + callID, Data: data})
}

// copyElsewhere is the type of the error that says the copy is on a node
// that runs: the work goes there (its name is the error's detail).
const copyElsewhere = "copy_elsewhere"

func elsewhere(node string) error {
	return temporal.NewNonRetryableApplicationError("the working copy is on node "+node+", which is running: the work goes there", copyElsewhere, nil, node)
}

// isElsewhere reports an elsewhere error, and the node it names.
func isElsewhere(err error) (string, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != copyElsewhere {
		return "", false
	}
	var node string
	_ = app.Details(&node)
	return node, node != ""
}

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
			return elsewhere(s.Node)
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
		data, err := a.ContentKey.Decrypt(sealed, blobAD(id))
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
	dir, err := a.Copies.dir(ctx, *s, a.runsCommands(sp))
	if err != nil {
		return err
	}
	_ = os.RemoveAll(dir) // what a restore cut short left
	if err := workspace.Restore(ctx, s.Repo, dir, s.BaseCommit, bundles, files); err != nil {
		return fmt.Errorf("the working copy is not on this node and could not be made again: %w", err)
	}
	if a.Copies.UID != 0 {
		if err := chownTree(dir, a.Copies.UID); err != nil {
			return fmt.Errorf("hand the restored working copy to the sandbox user: %w", err)
		}
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
