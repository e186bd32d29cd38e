package auditlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// memTree is a Merkle tree recomputed from the log, in memory.
type memTree []tlog.Hash

func (m memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(m)) {
			return nil, fmt.Errorf("hash %d is not in the recomputed tree", x)
		}
		out[i] = m[x]
	}
	return out, nil
}

// verifyTree checks the tree of every entry against the log as stored and
// against every checkpoint published: each leaf holds its entry (none
// altered, deleted or added after the fact), the stored tree is the one
// the entries make, every checkpoint kept in the store or published to
// Sealer.Dir is signed by a key the server recorded and covers exactly the
// log's first entries, and every change of key is in the access log.
func (s *Service) verifyTree(ctx context.Context, pubs []ed25519.PublicKey, access []audit.Entry) ([]wire.AuditReport, error) {
	var out []wire.AuditReport
	finding := func(sessionID string, seq int64, problem string, args ...any) {
		out = append(out, wire.AuditReport{SessionID: sessionID, BrokenAt: seq, Problem: fmt.Sprintf(problem, args...)})
	}
	size, stored, err := s.Store.AuditTree(ctx)
	if err != nil {
		return nil, err
	}
	var mem memTree
	var memLeaves int64 // the leaves mem holds
	var next int64      // the leaf expected next
	whole := int64(-1)  // the recomputed tree's size: up to the first missing leaf
	var last store.AuditLeaf
	for after := int64(-1); ; {
		page, err := s.Store.AuditLeaves(ctx, after, 5000)
		if err != nil {
			return nil, err
		}
		for _, l := range page {
			if l.Leaf > next {
				where := fmt.Sprintf("before entry %d of session %s", l.Seq, l.Session)
				if last.Session != "" {
					where = fmt.Sprintf("after entry %d of session %s, %s", last.Seq, last.Session, where)
				}
				// Whose entries they were is gone with them: the finding is
				// the tree's, not the next entry's session's.
				finding(audit.TreeLog, next, "leaves %d to %d of the tree have no entry: %d entries were deleted (%s)", next, l.Leaf-1, l.Leaf-next, where)
				if whole < 0 {
					whole = next
				}
			}
			if l.Leaf >= size {
				finding(l.Session, l.Seq, "the entry is leaf %d, past the tree's %d leaves: it was added after the fact", l.Leaf, size)
			} else if h, err := stored.ReadHashes([]int64{tlog.StoredHashIndex(0, l.Leaf)}); err != nil || h[0] != tlog.RecordHash([]byte(l.Data)) {
				finding(l.Session, l.Seq, "the entry differs from what the tree recorded at leaf %d: it was altered after it was written", l.Leaf)
			}
			if whole < 0 && l.Leaf == memLeaves {
				hs, err := tlog.StoredHashes(l.Leaf, []byte(l.Data), mem)
				if err != nil {
					return nil, err
				}
				mem, memLeaves = append(mem, hs...), memLeaves+1
			}
			next, last = l.Leaf+1, l
		}
		if len(page) < 5000 {
			break
		}
		after = page[len(page)-1].Leaf
	}
	if whole < 0 {
		whole = next
	}
	if next < size {
		finding(audit.TreeLog, next, "the tree has %d leaves but the log ends at leaf %d (entry %d of session %s): its last %d entries were deleted", size, next-1, last.Seq, last.Session, size-next)
	}
	if whole == size && size > 0 {
		want, err := tlog.TreeHash(size, stored)
		got, gerr := tlog.TreeHash(size, mem)
		if err != nil || gerr != nil || want != got {
			finding(audit.TreeLog, 0, "the stored tree is not the one the log's entries make: it was rewritten")
		}
	}

	// Every checkpoint published, with every key the server vouches for.
	keys, err := s.Store.AuditKeys(ctx)
	if err != nil {
		return nil, err
	}
	notes, err := s.Store.AuditCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	type published struct{ where, note string }
	var all []published
	for _, n := range notes {
		all = append(all, published{"kept in the database", n})
	}
	for _, e := range access {
		if e.Kind == "audit_checkpoint" && e.Meta["checkpoint"] != "" {
			all = append(all, published{fmt.Sprintf("entry %d of the access log", e.Seq), e.Meta["checkpoint"]})
		}
	}
	if s.Sealer != nil && s.Sealer.Dir != "" {
		files, _ := filepath.Glob(filepath.Join(s.Sealer.Dir, "checkpoint-*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				finding(audit.TreeLog, 0, "published checkpoint %s cannot be read: %v", f, err)
				continue
			}
			all = append(all, published{f, string(b)})
			if !slices.Contains(notes, string(b)) {
				finding(audit.TreeLog, 0, "the checkpoint published at %s is no longer kept in the database: the database's checkpoints were deleted", f)
			}
		}
	}
	// The latest checkpoint kept carries every configured witness's
	// cosignature: one missing means the witness was down then, or
	// refused it (the history it saw was rewritten).
	if s.Sealer != nil && len(notes) > 0 {
		latest := []byte(notes[len(notes)-1])
		for _, w := range s.Sealer.Witnesses {
			if _, err := note.Open(latest, note.VerifierList(w.Verifier)); err != nil {
				finding(audit.TreeLog, 0, "the latest checkpoint kept is not cosigned by witness %s: it was unreachable, or refused it because the history it saw was rewritten", w.URL)
			}
		}
	}
	for _, p := range all {
		var cpSize int64
		var root tlog.Hash
		opened := false
		for _, pub := range pubs {
			if cpSize, root, err = audit.OpenCheckpoint([]byte(p.note), pub); err == nil {
				opened = true
				break
			}
		}
		switch {
		case !opened:
			finding(audit.TreeLog, 0, "a checkpoint (%s) is signed by no key this server recorded: the audit key was replaced and the rotation hidden, or it is not this server's", p.where)
		case cpSize > size:
			finding(audit.TreeLog, 0, "a checkpoint (%s) covered %d entries; the log has %d now: it was truncated", p.where, cpSize, size)
		case cpSize > whole:
			finding(audit.TreeLog, 0, "a checkpoint (%s) covered %d entries; entries within them were deleted", p.where, cpSize)
		default:
			if got, err := tlog.TreeHash(cpSize, mem); err != nil || got != root {
				finding(audit.TreeLog, 0, "the log's first %d entries are not those a checkpoint (%s) covered: its history was rewritten", cpSize, p.where)
			}
		}
	}

	// Every key the database lists is one the key in use vouches for.
	for _, k := range keys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil || !slices.ContainsFunc(pubs, func(p ed25519.PublicKey) bool { return p.Equal(ed25519.PublicKey(b)) }) {
			finding(audit.AccessLog, 0, "the database lists audit key %.16s… as one this server signed with, but no rotation signed by its successor vouches for it: the keys were altered", k)
		}
	}
	return out, nil
}
