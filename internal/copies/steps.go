package copies

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/workspace"
	"go.temporal.io/sdk/temporal"
)

// Encrypter seals content at rest (vault.Key): a step's files.
type Encrypter interface {
	Encrypt(plain, ad []byte) []byte
}

// BlobAD binds a sealed blob to its ID: a blob moved under another ID
// does not open.
func BlobAD(id string) []byte { return []byte("blob/" + id) }

// blobID names content by the SHA-256 of its plain bytes.
func blobID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CopyWorkTimeout bounds the host's work of recording a copy's step after
// a call.
const CopyWorkTimeout = 2 * time.Minute

// RecordStep records the step of s's copy after callID (a call's ID, or
// "accept"/"reject"); prevBase, when the base just moved from it, makes
// the step carry the bundle of the new base. A failure is told in
// the transcript: the session goes on, only a takeover from here would
// not be faithful.
func RecordStep(ctx context.Context, st store.Store, key Encrypter, s session.Session, callID, prevBase string) {
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
				blobs[id] = key.Encrypt(f.Data, BlobAD(id))
			}
		}
		// A base the repository of origin lacks travels as a bundle: the
		// snapshot of an acceptance, or the first commit of a copy made
		// without a repository or from a remote one (whose mirror another
		// node may lack).
		from, bundled := "", first && (s.Repo == "" || s.Remote != nil)
		if prevBase != "" && prevBase != s.BaseCommit {
			from, bundled = prevBase, true
		}
		if bundled {
			b, err := workspace.BaseBundle(ctx, s.Workdir, s.BaseCommit, from)
			if err != nil {
				return err
			}
			c.Bundle = blobID(b)
			blobs[c.Bundle] = key.Encrypt(b, BlobAD(c.Bundle))
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

func Elsewhere(node string) error {
	return temporal.NewNonRetryableApplicationError("the working copy is on node "+node+", which is running: the work goes there", copyElsewhere, nil, node)
}

// IsElsewhere reports an elsewhere error, and the node it names.
func IsElsewhere(err error) (string, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != copyElsewhere {
		return "", false
	}
	var node string
	_ = app.Details(&node)
	return node, node != ""
}
