package auditlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/errdefs"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/wire"
)

// VerifyAudit verifies the audit log of session id, or, when id is
// empty, of every session p may audit (and for a server administrator,
// the access log and the whole tree too).
func (s *Service) VerifyAudit(ctx context.Context, p identity.Principal, id string) ([]wire.AuditReport, error) {
	keep, err := s.auditable(ctx, p)
	if err != nil {
		return nil, err
	}
	var ids []string
	sessions := map[string]session.Session{}
	if id != "" {
		x, err := s.auditSession(ctx, p, id)
		if err != nil {
			return nil, err
		}
		ids, sessions[id] = []string{id}, x
	} else {
		list, err := store.AllSessions(ctx, s.Store, session.Filter{IncludeArchived: true})
		if err != nil {
			return nil, err
		}
		for _, x := range list {
			if keep(x.Project) {
				ids, sessions[x.ID] = append(ids, x.ID), x
			}
		}
		if keep("") {
			ids = append(ids, audit.AccessLog) // server administrators' only
		}
	}
	// The access log says which keys the one in use vouches for.
	access, err := s.Store.AuditLog(ctx, audit.AccessLog)
	if err != nil {
		return nil, err
	}
	keys := vouchedKeys(s.Sealer.Public(), access)
	out := []wire.AuditReport{}
	if id == "" && keep("") {
		// The whole server's: the tree of every entry, and every
		// checkpoint published.
		tree, err := s.verifyTree(ctx, keys, access)
		if err != nil {
			return nil, err
		}
		out = append(out, tree...)
	}
	for _, sid := range ids {
		log := access
		if sid != audit.AccessLog {
			if log, err = s.Store.AuditLog(ctx, sid); err != nil {
				return nil, err
			}
		}
		seal, err := s.Store.AuditSeal(ctx, sid)
		if err != nil {
			return nil, err
		}
		r := wire.AuditReport{SessionID: sid, Entries: len(log), OK: true, Sealed: seal != nil}
		var b *audit.Broken
		if sid == audit.AccessLog {
			// No transcript behind it, never sealed: the chain is all.
			if err := audit.Verify(sid, log, nil, nil); errors.As(err, &b) {
				r.OK, r.BrokenAt, r.Problem = false, b.Seq, b.Reason
			}
			out = append(out, r)
			continue
		}
		if err := audit.Verify(sid, log, seal, keys...); errors.As(err, &b) {
			r.OK, r.BrokenAt, r.Problem = false, b.Seq, b.Reason
		} else if err != nil {
			return nil, err
		} else if seq, problem, err := s.matchTranscript(ctx, sid, log); err != nil {
			return nil, err
		} else if problem != "" {
			r.OK, r.BrokenAt, r.Problem = false, seq, problem
		} else if x := sessions[sid]; seal == nil && s.sealDue(x) {
			r.OK, r.Problem = false, fmt.Sprintf("the session is %s but its log has no seal (sealed when a session is reaped): the seal was deleted", x.Status)
		}
		out = append(out, r)
	}
	for _, r := range out {
		if !r.OK && s.Broken != nil {
			s.Broken()
		}
	}
	return out, nil
}

// vouchedKeys are the keys the server signed with that it can vouch for:
// the key in use (cur), and each one it succeeded, as the access log's
// rotations signed by their successors say. Keys the database merely
// lists are not among them.
func vouchedKeys(cur ed25519.PublicKey, access []audit.Entry) []ed25519.PublicKey {
	if cur == nil {
		return nil
	}
	trusted := []ed25519.PublicKey{cur}
	known := func(k []byte) bool {
		return slices.ContainsFunc(trusted, func(p ed25519.PublicKey) bool { return p.Equal(ed25519.PublicKey(k)) })
	}
	for i := len(access) - 1; i >= 0; i-- {
		e := access[i]
		if e.Kind != "audit_key_rotated" {
			continue
		}
		to, err1 := base64.StdEncoding.DecodeString(e.Meta["to"])
		from, err2 := base64.StdEncoding.DecodeString(e.Meta["from"])
		sig, err3 := base64.StdEncoding.DecodeString(e.Meta["signature"])
		if errors.Join(err1, err2, err3) != nil || len(to) != ed25519.PublicKeySize || len(from) != ed25519.PublicKeySize {
			continue
		}
		if known(to) && !known(from) && ed25519.Verify(ed25519.PublicKey(to), succession(e.Meta["from"], e.Meta["to"]), sig) {
			trusted = append(trusted, ed25519.PublicKey(from))
		}
	}
	return trusted
}

// sealDue says x should have been sealed by now: stopped (sealed at the
// stop) a while ago, or failed or stopped by its budget longer ago than
// its copy is kept (sealed when the collector takes the copy).
func (s *Service) sealDue(x session.Session) bool {
	ago := s.now().Sub(x.UpdatedAt)
	switch {
	case x.Status == session.StatusStopped && !x.BudgetStopped():
		return ago > s.SweepEvery
	case x.Status == session.StatusFailed || x.Status == session.StatusStopped:
		return !x.Held() && s.RetainFailed > 0 && ago > s.RetainFailed+2*s.SweepEvery
	}
	return false
}

// matchTranscript checks the transcript against the log: every event has
// its entry, and its content the entry's digest.
func (s *Service) matchTranscript(ctx context.Context, id string, log []audit.Entry) (int64, string, error) {
	var after int64
	for {
		events, err := s.Store.ListEvents(ctx, id, after, 0)
		if err != nil {
			return 0, "", err
		}
		if len(events) == 0 {
			return 0, "", nil
		}
		for _, e := range events {
			i := e.Seq - 1
			switch {
			case i < 0 || i >= int64(len(log)):
				return e.Seq, "the transcript has an event the audit log does not (added after the fact)", nil
			case log[i].Digest != audit.Digest(e.Data):
				return e.Seq, "the transcript's event differs from what its entry recorded (the event was altered)", nil
			}
		}
		after = events[len(events)-1].Seq
	}
}

// Sealer seals sessions' audit logs with the server's Ed25519 key, when
// they are reaped: a stopped session at once, a failed or budget-stopped
// one (whose work may still be reviewed and accepted, decisions its log
// records) when the collector removes its copy. Nothing is reaped
// unsealed.
type Sealer struct {
	Store store.Store
	Key   ed25519.PrivateKey
	Now   func() time.Time
	// Witnesses cosign each checkpoint published, once they have checked
	// the log only grew since the last one they cosigned
	// (c2sp.org/tlog-witness); the cosigned checkpoint is what is kept.
	Witnesses []audit.Witness
	// HTTP reaches the witnesses (http.DefaultClient when nil).
	HTTP *http.Client
	// witnessed is the size each witness cosigned last (by URL).
	mu        sync.Mutex
	witnessed map[string]int64
	// Dir, when set, is where checkpoints are also published as files
	// (checkpoint-SIZE, never overwritten): a place the operator keeps out
	// of this server's reach (another machine's mount, write-once
	// storage), so that a history rewritten in the database is caught by
	// the checkpoints published before.
	Dir string
}

// Public is the key seals verify with.
func (s *Sealer) Public() ed25519.PublicKey {
	if s == nil || s.Key == nil {
		return nil
	}
	return s.Key.Public().(ed25519.PublicKey)
}

// Seal signs and stores the head of session id's log; a log sealed
// already is left as it is.
func (s *Sealer) Seal(ctx context.Context, id string) error {
	if s == nil || s.Key == nil {
		return nil
	}
	for range 3 {
		if seal, err := s.Store.AuditSeal(ctx, id); err != nil || seal != nil {
			return err
		}
		log, err := s.Store.AuditLog(ctx, id)
		if err != nil || len(log) == 0 {
			return err
		}
		seal, err := audit.SealOf(log, s.Key, s.Now())
		if err != nil {
			return err
		}
		if err = s.Store.SealAudit(ctx, seal); !errors.Is(err, errdefs.ErrConflict) {
			if err != nil {
				return err
			}
			// Every seal publishes the tree's head; a publication that
			// fails (a witness down) never fails the seal: the sweeper
			// publishes again and reports it.
			_, _ = s.Publish(ctx)
			return nil
		}
		// An entry landed meanwhile: seal the new head.
	}
	return fmt.Errorf("seal session %s's audit log: its head kept moving", id)
}

// Checkpoint signs the current head of the Merkle tree of every audit
// entry (a C2SP signed note) for p. Its size counts every project's
// entries, so it is for those who audit: server administrators and
// auditors (of any project); anyone else is refused.
func (s *Service) Checkpoint(ctx context.Context, p identity.Principal) ([]byte, error) {
	within, scoped, err := s.Access.Readable(ctx, p, identity.Audit)
	if err != nil {
		return nil, err
	}
	if scoped && len(within) == 0 {
		return nil, fmt.Errorf("%w: the audit checkpoint covers every project's log: it is for server administrators and auditors", errdefs.ErrDenied)
	}
	return s.checkpoint(ctx)
}

func (s *Service) checkpoint(ctx context.Context) ([]byte, error) {
	if s.Sealer == nil || s.Sealer.Key == nil {
		return nil, fmt.Errorf("this server signs no checkpoints: %w", errdefs.ErrNotFound)
	}
	note, _, err := s.Sealer.checkpoint(ctx)
	return note, err
}

// checkpoint signs the tree's current head.
func (s *Sealer) checkpoint(ctx context.Context) ([]byte, int64, error) {
	size, r, err := s.Store.AuditTree(ctx)
	if err != nil {
		return nil, 0, err
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return nil, 0, err
	}
	note, err := audit.Checkpoint(size, root, s.Key)
	return note, size, err
}

// Publish signs the tree's current head and publishes it: kept in the
// store, written to Dir when set, and recorded in the access log as an
// audit_checkpoint entry, so that every SIEM export stream carries it out
// of the server's reach. The sweeper publishes every ten minutes, and
// every seal; a tree that has not grown since the last checkpoint (but for
// that checkpoint's own entry) is not published again. It returns the
// checkpoint.
func (s *Sealer) Publish(ctx context.Context) ([]byte, error) {
	if s == nil || s.Key == nil {
		return nil, nil
	}
	note, size, err := s.checkpoint(ctx)
	if err != nil || size == 0 {
		return note, err
	}
	kept, err := s.Store.AuditCheckpoints(ctx)
	if err != nil {
		return note, err
	}
	if len(kept) > 0 {
		if last, _, err := audit.OpenCheckpoint([]byte(kept[len(kept)-1]), s.Public()); err == nil && size <= last+1 {
			return note, nil
		}
	}
	// A witness that is down or refuses does not keep the checkpoint
	// from being published elsewhere; its error is returned after.
	note, witnessErr := s.witness(ctx, note, size)
	if err := s.Store.SaveAuditCheckpoint(ctx, size, string(note)); err != nil {
		return note, errors.Join(witnessErr, err)
	}
	if s.Dir != "" {
		if err := writeOnce(filepath.Join(s.Dir, fmt.Sprintf("checkpoint-%d", size)), note); err != nil {
			return note, errors.Join(witnessErr, fmt.Errorf("publish the audit checkpoint: %w", err))
		}
	}
	_, err = s.Store.AppendAccess(ctx, audit.Entry{Time: s.Now().UTC(), Identity: "system:paddock", Kind: "audit_checkpoint",
		Meta: map[string]string{"size": strconv.FormatInt(size, 10), "checkpoint": string(note)}})
	return note, errors.Join(witnessErr, err)
}

// witness has every witness cosign note (a checkpoint of size entries)
// and returns it with their cosignatures. A witness that last cosigned
// another size is shown the proof from that size; one that refuses (the
// log does not extend what it cosigned) is an error the operator must
// see: the history it witnessed was rewritten.
func (s *Sealer) witness(ctx context.Context, note []byte, size int64) ([]byte, error) {
	if len(s.Witnesses) == 0 {
		return note, nil
	}
	hc := s.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	_, tree, err := s.Store.AuditTree(ctx)
	if err != nil {
		return note, err
	}
	cosigned := note
	var errs []error
	for _, w := range s.Witnesses {
		s.mu.Lock()
		old := s.witnessed[w.URL]
		s.mu.Unlock()
		var sigs []byte
		for range 2 {
			var proof tlog.TreeProof
			if old > 0 && old < size {
				if proof, err = tlog.ProveTree(size, old, tree); err != nil {
					break
				}
			}
			sigs, err = w.Cosign(ctx, hc, note, old, proof)
			var conflict *audit.WitnessConflict
			if errors.As(err, &conflict) && conflict.Size <= size && conflict.Size != old {
				old = conflict.Size // the witness's own last size: prove from it
				continue
			}
			break
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		if s.witnessed == nil {
			s.witnessed = map[string]int64{}
		}
		s.witnessed[w.URL] = size
		s.mu.Unlock()
		cosigned = append(cosigned, sigs...)
	}
	return cosigned, errors.Join(errs...)
}

// writeOnce writes a new file; one that exists is left as it is.
func writeOnce(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// UseAuditKey records the signing key in use. A key other than the last
// one recorded is a rotation: the access log says so, with the new key's
// signature over the old one (a succession), so that seals and
// checkpoints signed before still verify, vouched for by the key in use,
// and a key listed in the database without such a succession is trusted
// for nothing.
func (s *Service) UseAuditKey(ctx context.Context) error {
	pub := s.Sealer.Public()
	if pub == nil {
		return nil
	}
	to := base64.StdEncoding.EncodeToString(pub)
	before, err := s.Store.UseAuditKey(ctx, to)
	if err != nil || len(before) == 0 {
		return err
	}
	from := before[len(before)-1]
	sig := ed25519.Sign(s.Sealer.Key, succession(from, to))
	return s.Access.Record(ctx, identity.Principal{User: "paddock", Via: "start"}, "audit_key_rotated",
		map[string]string{"from": from, "to": to, "signature": base64.StdEncoding.EncodeToString(sig)})
}

// succession is what a new audit key signs to vouch for the one before.
func succession(from, to string) []byte {
	return []byte("paddock-audit-key-succession\n" + from + "\n" + to + "\n")
}

// Prove proves entry seq of session id is in the tree of a fresh
// checkpoint and, with oldSize > 0, that the tree of oldSize leaves is a
// prefix of it.
func (s *Service) Prove(ctx context.Context, p identity.Principal, id string, seq, oldSize int64) (audit.Proof, error) {
	if _, err := s.auditSession(ctx, p, id); err != nil {
		return audit.Proof{}, err
	}
	if s.Sealer == nil || s.Sealer.Key == nil {
		return audit.Proof{}, fmt.Errorf("this server signs no checkpoints: %w", errdefs.ErrNotFound)
	}
	leaf, data, err := s.Store.AuditLeaf(ctx, id, seq)
	if err != nil {
		return audit.Proof{}, err
	}
	size, r, err := s.Store.AuditTree(ctx)
	if err != nil {
		return audit.Proof{}, err
	}
	if oldSize < 0 || oldSize > size {
		return audit.Proof{}, fmt.Errorf("%w: the older checkpoint's size %d: the log has %d entries", errdefs.ErrInvalid, oldSize, size)
	}
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return audit.Proof{}, err
	}
	cp, err := audit.Checkpoint(size, root, s.Sealer.Key)
	if err != nil {
		return audit.Proof{}, err
	}
	inc, err := tlog.ProveRecord(size, leaf, r)
	if err != nil {
		return audit.Proof{}, err
	}
	proof := audit.Proof{Checkpoint: string(cp), Leaf: leaf, Entry: data, Inclusion: audit.Hashes(inc)}
	if oldSize > 0 {
		cons, err := tlog.ProveTree(size, oldSize, r)
		if err != nil {
			return audit.Proof{}, err
		}
		proof.OldSize, proof.Consistency = oldSize, audit.Hashes(cons)
	}
	return proof, nil
}

// MaxContentRetention bounds how long a project may keep audit content.
const MaxContentRetention = 10 * 365 * 24 * time.Hour

// Opener opens content sealed at rest (vault.Key): what projects retain.
type Opener interface {
	Decrypt(sealed, ad []byte) ([]byte, error)
}

// AuditLog is session id's log; with content, each entry carries what its
// project retained (nothing once the retention period is over).
func (s *Service) AuditLog(ctx context.Context, p identity.Principal, id string, content bool) ([]wire.AuditEntry, error) {
	if _, err := s.auditSession(ctx, p, id); err != nil {
		return nil, err
	}
	log, err := s.Store.AuditLog(ctx, id)
	if err != nil {
		return nil, err
	}
	var sealed map[int64][]byte
	if content {
		if sealed, err = s.Store.AuditContent(ctx, id); err != nil {
			return nil, err
		}
	}
	out := make([]wire.AuditEntry, len(log))
	for i, e := range log {
		out[i].Entry = e
		c, ok := sealed[e.Seq]
		if !ok {
			continue
		}
		switch plain, err := s.openContent(c, e); {
		case err != nil:
			out[i].ContentProblem = err.Error()
		case audit.Digest(plain) != e.Digest:
			out[i].ContentProblem = "the retained content does not match the entry's digest"
		default:
			out[i].Content = plain
		}
	}
	return out, nil
}

func (s *Service) openContent(sealed []byte, e audit.Entry) ([]byte, error) {
	if s.ContentKey == nil {
		return nil, errors.New("no content key configured")
	}
	return s.ContentKey.Decrypt(sealed, audit.ContentAD(e))
}

// SetContentRetention sets how long project keeps its sessions' audit
// content (encrypted, apart from the log); 0 stops keeping new content.
func (s *Service) SetContentRetention(ctx context.Context, p identity.Principal, project string, d time.Duration) error {
	if err := identity.CheckName(identity.ProjectName, project); err != nil {
		return err
	}
	if err := s.Access.Allow(ctx, p, project, identity.Manage, fmt.Sprintf("project %q", project)); err != nil {
		return err
	}
	if d < 0 || d > MaxContentRetention {
		return fmt.Errorf("%w: content retention %s: want 0 (off) up to %s", errdefs.ErrInvalid, d, MaxContentRetention)
	}
	return s.Store.SetContentRetention(ctx, project, d)
}

// SealEnded says whether ended session id's audit log is sealed, sealing
// it first when the session ended without a seal (a failed session's log
// is otherwise sealed when its copy is collected): what must hold before
// the record of a session may go. Server administrators only.
func (s *Service) SealEnded(ctx context.Context, p identity.Principal, id string) (bool, error) {
	if err := access.MustAdmin(p, "sealing a session's audit log"); err != nil {
		return false, err
	}
	x, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return false, err
	}
	if !x.Status.Terminal() {
		return false, fmt.Errorf("%w: session %s is %s: only an ended session's log is sealed", errdefs.ErrConflict, id, x.Status)
	}
	seal, err := s.Store.AuditSeal(ctx, id)
	if err != nil || seal != nil {
		return seal != nil, err
	}
	if err := s.Sealer.Seal(ctx, id); err != nil {
		return false, err
	}
	return true, nil
}
