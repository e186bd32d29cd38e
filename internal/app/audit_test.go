package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// TestAuditLogVerifiesAndCatchesTampering: a session's every transcript
// event has its chained audit entry (the first one its frame); the log
// verifies; editing an entry, an event, or removing an entry in the
// database is caught at that entry by `paddock audit verify`.
func TestAuditLogVerifiesAndCatchesTampering(t *testing.T) {
	ctx := context.Background()
	name := unique("audited")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "process the notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)

	log, err := api.Audit().Log(ctx, x.ID, false)
	require.NoError(t, err)
	events, err := api.Sessions().Events(ctx, x.ID, 0)
	require.NoError(t, err)
	require.Len(t, log, len(events), "one entry per event")
	require.Equal(t, "true", log[0].Meta["frame"])
	require.Equal(t, "operator:tester", log[0].Meta["createdBy"])
	require.NotEmpty(t, log[0].Meta["instruction"])
	for _, e := range log {
		require.NotContains(t, strings.Join(mapValues(e.Meta), " "), "process the notes", "metadata, never content")
	}
	code, out := paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 0, code, out)
	code, out = paddock(t, "audit", "show", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "frame=true")
	code, out = paddock(t, "audit", "export", "--format", "cef", "--since", "1h")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "CEF:0|Paddock|paddock|1|")
	require.Contains(t, out, "cs1="+x.ID)
	code, out = paddock(t, "audit", "export")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"session":"`+x.ID+`"`)

	db := openLive(t)
	defer db.Close()
	tamper := func(q string, args ...any) {
		t.Helper()
		_, err := db.ExecContext(ctx, q, args...)
		require.NoError(t, err)
	}
	// An event's content changed behind the log's back.
	var data string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT data FROM events WHERE session_id = ? AND seq = 3`, x.ID).Scan(&data))
	tamper(`UPDATE events SET data = ? WHERE session_id = ? AND seq = 3`, strings.Replace(data, "}", `,"x":1}`, 1), x.ID)
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "entry 3: the transcript's event differs")
	tamper(`UPDATE events SET data = ? WHERE session_id = ? AND seq = 3`, data, x.ID)
	// An entry's identity rewritten.
	var entry string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT entry FROM audit WHERE session_id = ? AND seq = 2`, x.ID).Scan(&entry))
	tamper(`UPDATE audit SET entry = replace(entry, '"identity":"', '"identity":"operator:mallory/') WHERE session_id = ? AND seq = 2`, x.ID)
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "entry 2: its content does not match its recorded hash")
	tamper(`UPDATE audit SET entry = ? WHERE session_id = ? AND seq = 2`, entry, x.ID)
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 0, code, out)
	// An entry removed.
	tamper(`DELETE FROM audit WHERE session_id = ? AND seq = 4`, x.ID)
	code, out = paddock(t, "audit", "verify")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "session "+x.ID+": entry 4:")
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestStoppedSessionIsSealed: a stop seals the session's log with the
// server's key before its copy goes; the seal verifies with the key
// `paddock audit key` prints; a sealed log gains no entries; a forged or
// truncated seal is caught.
func TestStoppedSessionIsSealed(t *testing.T) {
	ctx := context.Background()
	name := unique("sealed")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "process the notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	send(t, x.ID, session.KindStop, session.StopPayload{Reason: "done"})
	waitStatus(t, x.ID, session.StatusStopped)
	waitFor(t, "the seal", func() (bool, error) {
		r, err := api.Audit().Verify(ctx, x.ID)
		return err == nil && len(r) == 1 && r[0].Sealed, err
	})
	code, out := paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "1 sealed, seals verified")
	code, out = paddock(t, "audit", "key")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `^ed25519 [A-Za-z0-9+/]{43}=\n$`, out)

	_, err = api.Sessions().Hold(ctx, x.ID, "too late")
	require.Equal(t, 409, apiStatus(t, err), "a sealed log gains no entries")

	db := openLive(t)
	defer db.Close()
	var seal string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT seal FROM audit_seals WHERE session_id = ?`, x.ID).Scan(&seal))
	var last int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT MAX(seq) FROM audit WHERE session_id = ?`, x.ID).Scan(&last))
	// Truncated after sealing: the last entry removed.
	_, err = db.ExecContext(ctx, `DELETE FROM audit WHERE session_id = ? AND seq = ?`, x.ID, last)
	require.NoError(t, err)
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "truncated")
	// A seal forged over the truncated log: its signature fails.
	var head string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT hash FROM audit WHERE session_id = ? AND seq = ?`, x.ID, last-1).Scan(&head))
	forged := strings.Replace(seal, `"count":`+strconv.FormatInt(last, 10), `"count":`+strconv.FormatInt(last-1, 10), 1)
	forged = regexp.MustCompile(`"head":"[0-9a-f]+"`).ReplaceAllString(forged, `"head":"`+head+`"`)
	_, err = db.ExecContext(ctx, `UPDATE audit_seals SET seal = ? WHERE session_id = ?`, forged, x.ID)
	require.NoError(t, err)
	code, out = paddock(t, "audit", "verify", "--session", x.ID)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "signature does not verify")
}

// TestCheckpointsAndProofs: a checkpoint kept, more sessions run, then an
// entry's inclusion and the log's growth since the kept checkpoint are
// proven and checked with the public key; a checkpoint by another key is
// refused.
func TestCheckpointsAndProofs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	code, out := paddock(t, "audit", "checkpoint")
	require.Equal(t, 0, code, out)
	require.True(t, strings.HasPrefix(out, "paddock-audit-log\n"), out)
	kept := filepath.Join(dir, "old.checkpoint")
	require.NoError(t, os.WriteFile(kept, []byte(out), 0o600))

	name := unique("proven")
	applyAgent(t, name, script(t, "work.yaml"), "")
	x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: name, Repo: gitRepo(t), Message: "process the notes"})
	require.NoError(t, err)
	waitStatus(t, x.ID, session.StatusAwaiting)
	code, out = paddock(t, "audit", "prove", "--session", x.ID, "--seq", "2", "--since-checkpoint", kept)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "entry 2 of session "+x.ID)
	require.Contains(t, out, "it only grew")

	// A checkpoint that is not the server's.
	code, key := paddock(t, "audit", "key")
	require.Equal(t, 0, code)
	_, other, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	forged, err := audit.Checkpoint(3, tlog.Hash{}, other)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kept, forged, 0o600))
	code, out = paddock(t, "audit", "prove", "--session", x.ID, "--seq", "2", "--since-checkpoint", kept, "--key", strings.TrimSpace(key))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "the older checkpoint")
}
