package auditlog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/access"
	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/identity"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/spec"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/store/sqlstore"
)

// auditEnv is a server's audit log on a real SQLite file: sessions with
// entries, the access log, seals, checkpoints published to a directory,
// and the database opened a second time, as an attacker with the file.
type auditEnv struct {
	t   *testing.T
	svc *Service
	db  *sql.DB
	dir string // where checkpoints are published
}

func newAuditEnv(t *testing.T) *auditEnv {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "paddock.db")
	st, err := sqlstore.Open(ctx, path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	dir := t.TempDir()
	later := time.Now().Add(time.Hour) // verification runs an hour on: a stop's seal is due
	svc := &Service{Store: st, Access: &access.Service{Store: st}, Sealer: &Sealer{Store: st, Key: key, Now: time.Now, Dir: dir}, Now: func() time.Time { return later }}
	require.NoError(t, svc.UseAuditKey(ctx))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &auditEnv{t: t, svc: svc, db: db, dir: dir}
}

// session makes a session with n transcript events (n audit entries).
func (e *auditEnv) session(id string, n int) {
	ctx := context.Background()
	_, _, err := e.svc.Store.CreateSession(ctx, store.NewSession{ID: id, Project: "default",
		Agent:     spec.Record{Project: "default", Name: "a", Spec: json.RawMessage(`{"name":"a"}`), Digest: "d"},
		CreatedBy: session.Sender{Kind: session.SenderOperator, ID: "ana"}, StartKind: session.KindStart, StartPayload: json.RawMessage(`{}`)})
	require.NoError(e.t, err)
	for i := range n {
		_, err := e.svc.Store.AppendEvent(ctx, session.Event{SessionID: id, Kind: session.EventNotice, Data: json.RawMessage(fmt.Sprintf(`{"text":"step %d"}`, i))})
		require.NoError(e.t, err)
	}
}

func (e *auditEnv) stop(id string) {
	ctx := context.Background()
	require.NoError(e.t, e.svc.Store.StopSession(ctx, id, session.StopPayload{Reason: "done"}))
	require.NoError(e.t, e.svc.Sealer.Seal(ctx, id))
}

func (e *auditEnv) exec(q string, args ...any) {
	e.t.Helper()
	_, err := e.db.Exec(q, args...)
	require.NoError(e.t, err)
}

// findings verifies the whole server and returns each problem found as
// "SESSION entry N: PROBLEM".
func (e *auditEnv) findings() []string {
	e.t.Helper()
	reports, err := e.svc.VerifyAudit(context.Background(), identity.Principal{User: "root", Admin: true}, "")
	require.NoError(e.t, err)
	var out []string
	for _, r := range reports {
		if !r.OK {
			out = append(out, fmt.Sprintf("%s entry %d: %s", r.SessionID, r.BrokenAt, r.Problem))
		}
	}
	return out
}

func (e *auditEnv) requireFinding(want ...string) {
	e.t.Helper()
	got := e.findings()
	for _, w := range want {
		require.True(e.t, strings.Contains(strings.Join(got, "\n"), w), "no finding says %q; found:\n%s", w, strings.Join(got, "\n"))
	}
}

// rechain rewrites session id's entries from seq on with change applied
// to entry seq, each linked to the one before, as an attacker who knows
// the chain's rules would; the events are left as they are.
func (e *auditEnv) rechain(id string, seq int64, change func(*audit.Entry)) {
	e.t.Helper()
	rows, err := e.db.Query(`SELECT seq, entry FROM audit WHERE session_id = ? ORDER BY seq`, id)
	require.NoError(e.t, err)
	var entries []audit.Entry
	for rows.Next() {
		var n int64
		var raw string
		require.NoError(e.t, rows.Scan(&n, &raw))
		var x audit.Entry
		require.NoError(e.t, json.Unmarshal([]byte(raw), &x))
		entries = append(entries, x)
	}
	require.NoError(e.t, rows.Close())
	for i := range entries {
		if entries[i].Seq < seq {
			continue
		}
		if entries[i].Seq == seq {
			change(&entries[i])
		}
		var prev *audit.Entry
		if i > 0 {
			prev = &entries[i-1]
		}
		entries[i] = audit.Link(prev, entries[i])
		data, _ := json.Marshal(entries[i])
		e.exec(`UPDATE audit SET entry = ?, hash = ? WHERE session_id = ? AND seq = ?`, string(data), entries[i].Hash, id, entries[i].Seq)
	}
}

// rebuildTree recomputes the stored tree from the entries as they are, as
// an attacker covering a rewrite would.
func (e *auditEnv) rebuildTree() {
	e.t.Helper()
	rows, err := e.db.Query(`SELECT entry FROM audit WHERE leaf IS NOT NULL ORDER BY leaf`)
	require.NoError(e.t, err)
	var mem memTree
	n := int64(0)
	for rows.Next() {
		var raw string
		require.NoError(e.t, rows.Scan(&raw))
		hs, err := tlog.StoredHashes(n, []byte(raw), mem)
		require.NoError(e.t, err)
		mem, n = append(mem, hs...), n+1
	}
	require.NoError(e.t, rows.Close())
	e.exec(`DELETE FROM audit_tree`)
	for i, h := range mem {
		e.exec(`INSERT INTO audit_tree (idx, hash) VALUES (?, ?)`, i, h[:])
	}
}

// scene is what each attack starts from: a stopped and sealed session, a
// live one, another after them, access entries, a checkpoint published.
func scene(t *testing.T) *auditEnv {
	e := newAuditEnv(t)
	ctx := context.Background()
	e.session("stopped-one", 5)
	e.session("live-one", 6)
	e.stop("stopped-one")
	require.NoError(t, e.svc.Access.CreateProject(ctx, identity.Principal{User: "root", Admin: true}, "team-a"))
	require.NoError(t, e.svc.Access.CreateProject(ctx, identity.Principal{User: "root", Admin: true}, "team-b"))
	e.session("later-one", 3)
	_, err := e.svc.Sealer.Publish(ctx)
	require.NoError(t, err)
	return e
}

// Each attack of issue 36 on the audit log, on a database tampered
// directly: `audit verify` reports it, naming the session and the entry
// where they are still known.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	t.Run("control: nothing tampered", func(t *testing.T) {
		e := scene(t)
		require.Empty(t, e.findings())
	})
	t.Run("a stopped session's seal deleted", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit_seals WHERE session_id = 'stopped-one'`)
		e.requireFinding("stopped-one entry 0: the session is stopped but its log has no seal")
	})
	t.Run("a stopped session's last entries deleted with its seal", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit WHERE session_id = 'stopped-one' AND seq > 3`)
		e.exec(`DELETE FROM audit_seals WHERE session_id = 'stopped-one'`)
		e.requireFinding("entries were deleted (after entry 3 of session stopped-one")
	})
	t.Run("a live session's entry altered and the chain rebuilt", func(t *testing.T) {
		e := scene(t)
		e.rechain("live-one", 2, func(x *audit.Entry) { x.Identity = "operator:mallory" })
		e.requireFinding("live-one entry 2: the entry differs from what the tree recorded")
	})
	t.Run("a live session's entries deleted and the chain rebuilt", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit WHERE session_id = 'live-one' AND seq = 3`)
		e.exec(`DELETE FROM events WHERE session_id = 'live-one' AND seq = 3`)
		e.exec(`UPDATE audit SET seq = seq - 1 WHERE session_id = 'live-one' AND seq > 3`)
		e.rechain("live-one", 3, func(x *audit.Entry) { x.Seq = 3 })
		e.requireFinding("entries were deleted (after entry 2 of session live-one")
		// Whose the deleted leaves were is gone with them: the finding is
		// the tree's, never the next entry's session's (an innocent log).
		for _, f := range e.findings() {
			if strings.Contains(f, "were deleted") {
				require.True(t, strings.HasPrefix(f, audit.TreeLog+" "), "a deletion blamed on a session's log: %s", f)
			}
		}
	})
	t.Run("a live session truncated", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit WHERE session_id = 'live-one' AND seq > 4`)
		e.exec(`DELETE FROM events WHERE session_id = 'live-one' AND seq > 4`)
		e.requireFinding("entries were deleted (after entry 4 of session live-one")
	})
	t.Run("the access log altered and rebuilt", func(t *testing.T) {
		e := scene(t)
		e.rechain(audit.AccessLog, 1, func(x *audit.Entry) { x.Identity = "operator:nobody" })
		e.requireFinding(audit.AccessLog + " entry 1: the entry differs from what the tree recorded")
	})
	t.Run("the access log truncated", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit WHERE session_id = ? AND seq > 1`, audit.AccessLog)
		e.requireFinding("entries were deleted (after entry 1 of session " + audit.AccessLog)
	})
	t.Run("a whole session deleted", func(t *testing.T) {
		e := scene(t)
		e.exec(`DELETE FROM audit WHERE session_id = 'live-one'`)
		e.exec(`DELETE FROM events WHERE session_id = 'live-one'`)
		e.exec(`DELETE FROM commands WHERE session_id = 'live-one'`)
		e.exec(`DELETE FROM sessions WHERE id = 'live-one'`)
		e.requireFinding("entries were deleted", "a checkpoint (kept in the database) covered")
	})
	t.Run("history rewritten, tree rebuilt and the database's checkpoints deleted", func(t *testing.T) {
		e := scene(t)
		e.rechain("stopped-one", 1, func(x *audit.Entry) { x.Identity = "operator:mallory" })
		e.rebuildTree()
		e.exec(`DELETE FROM audit_checkpoints`)
		e.requireFinding("its history was rewritten", "no longer kept in the database")
		// And the SIEM holds what the export stream carried: the
		// checkpoint entry of the access log, as exported before.
		var exported string
		require.NoError(t, e.db.QueryRow(`SELECT entry FROM audit WHERE session_id = ? AND entry LIKE '%audit_checkpoint%'`, audit.AccessLog).Scan(&exported))
		var cp audit.Entry
		require.NoError(t, json.Unmarshal([]byte(exported), &cp))
		size, root, err := audit.OpenCheckpoint([]byte(cp.Meta["checkpoint"]), e.svc.Sealer.Public())
		require.NoError(t, err)
		_, stored, err := e.svc.Store.AuditTree(context.Background())
		require.NoError(t, err)
		now, err := tlog.TreeHash(size, stored)
		require.NoError(t, err)
		require.NotEqual(t, root, now, "the exported checkpoint no longer matches the rewritten tree: the SIEM sees it")
	})
	t.Run("the audit key replaced and the history re-signed", func(t *testing.T) {
		e := scene(t)
		ctx := context.Background()
		_, forged, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		e.exec(`DELETE FROM audit_keys`)
		e.exec(`DELETE FROM audit_checkpoints`)
		e.svc.Sealer.Key = forged
		_, err = e.svc.Store.UseAuditKey(ctx, "ignored-by-the-attacker")
		require.NoError(t, err)
		e.exec(`DELETE FROM audit_keys`)
		_, err = e.svc.Store.UseAuditKey(ctx, encodeKey(forged))
		require.NoError(t, err)
		e.requireFinding("is signed by no key this server recorded")
	})
	t.Run("the database alone: keys listed, history rewritten and re-signed with the attacker's key", func(t *testing.T) {
		// The review's attack: no checkpoint directory, the server's key
		// untouched; the attacker lists a key of theirs, rewrites a sealed
		// session, re-signs every checkpoint the database holds and the
		// seal with it.
		e := scene(t)
		e.svc.Sealer.Dir = ""
		ctx := context.Background()
		_, forged, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		e.exec(`UPDATE audit_keys SET public = ?`, encodeKey(forged))
		e.rechain("stopped-one", 1, func(x *audit.Entry) { x.Identity = "operator:mallory" })
		e.rebuildTree()
		rows, err := e.db.Query(`SELECT seq, entry FROM audit WHERE session_id = ? ORDER BY seq`, audit.AccessLog)
		require.NoError(t, err)
		var checkpoints []audit.Entry
		for rows.Next() {
			var seq int64
			var raw string
			require.NoError(t, rows.Scan(&seq, &raw))
			var x audit.Entry
			require.NoError(t, json.Unmarshal([]byte(raw), &x))
			if x.Kind == "audit_checkpoint" {
				checkpoints = append(checkpoints, x)
			}
		}
		require.NoError(t, rows.Close())
		for _, c := range checkpoints {
			size, err := strconv.ParseInt(c.Meta["size"], 10, 64)
			require.NoError(t, err)
			_, stored, err := e.svc.Store.AuditTree(ctx)
			require.NoError(t, err)
			root, err := tlog.TreeHash(size, stored)
			require.NoError(t, err)
			note, err := audit.Checkpoint(size, root, forged)
			require.NoError(t, err)
			e.rechain(audit.AccessLog, c.Seq, func(x *audit.Entry) { x.Meta["checkpoint"] = string(note) })
			e.rebuildTree()
		}
		e.exec(`DELETE FROM audit_checkpoints`)
		e.exec(`DELETE FROM audit_seals WHERE session_id = 'stopped-one'`)
		require.NoError(t, (&Sealer{Store: e.svc.Store, Key: forged, Now: time.Now}).Seal(ctx, "stopped-one"))
		e.requireFinding("stopped-one entry 0: its signature does not verify", "is signed by no key this server recorded", "no rotation signed by its successor vouches for it")
	})
	t.Run("control: a rotation recorded at start", func(t *testing.T) {
		e := scene(t)
		_, next, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		e.svc.Sealer.Key = next
		require.NoError(t, e.svc.UseAuditKey(context.Background()))
		require.Empty(t, e.findings(), "a checkpoint signed before a recorded rotation still verifies")
	})
}

func encodeKey(k ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(k.Public().(ed25519.PublicKey))
}
