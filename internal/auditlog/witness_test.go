package auditlog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"filippo.io/torchwood"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/paddock-dev/paddock/internal/audit"
)

// testWitness is a witness as c2sp.org/tlog-witness describes it, with
// the reference cosignature signer: it cosigns a checkpoint of the log
// only when it extends the last one it cosigned.
type testWitness struct {
	t      *testing.T
	log    note.Verifier
	signer *torchwood.CosignatureSigner
	mu     sync.Mutex
	size   int64
	root   tlog.Hash
}

func (w *testWitness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.URL.Path != "/add-checkpoint" {
		http.NotFound(rw, r)
		return
	}
	br := bufio.NewReader(r.Body)
	var old int64
	line, _ := br.ReadString('\n')
	if _, err := fmt.Sscanf(line, "old %d\n", &old); err != nil {
		http.Error(rw, "bad old line", http.StatusBadRequest)
		return
	}
	var proof tlog.TreeProof
	for {
		line, _ := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) != tlog.HashSize {
			http.Error(rw, "bad proof", http.StatusBadRequest)
			return
		}
		var h tlog.Hash
		copy(h[:], b)
		proof = append(proof, h)
	}
	rest := new(bytes.Buffer)
	_, _ = rest.ReadFrom(br)
	n, err := note.Open(rest.Bytes(), note.VerifierList(w.log))
	if err != nil {
		http.Error(rw, "checkpoint: "+err.Error(), http.StatusForbidden)
		return
	}
	c, err := torchwood.ParseCheckpoint(n.Text)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	if old != w.size {
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", w.size)
		return
	}
	if c.N < w.size || w.size > 0 && c.N > w.size && tlog.CheckTree(proof, c.N, c.Hash, w.size, w.root) != nil || c.N == w.size && c.Hash != w.root {
		http.Error(rw, "the log does not extend the checkpoint cosigned last", http.StatusUnprocessableEntity)
		return
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, w.signer)
	require.NoError(w.t, err)
	w.size, w.root = c.N, c.Hash
	_, sigs, _ := bytes.Cut(signed, []byte("\n\n"))
	_, _ = rw.Write(sigs)
}

// Checkpoints are cosigned by witnesses, which refuse a rewritten history:
// the cosigned checkpoint is what is kept, and a log rewritten after it
// cannot be cosigned again.
func TestWitnessesCosignAndRefuseARewrite(t *testing.T) {
	e := newAuditEnv(t)
	ctx := context.Background()
	_, wkey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := torchwood.NewCosignatureSigner("witness.example", wkey)
	require.NoError(t, err)
	vkey, err := audit.VerifierKey(e.svc.Sealer.Public())
	require.NoError(t, err)
	logVerifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	w := &testWitness{t: t, log: logVerifier, signer: signer}
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	witness, err := audit.ParseWitness(srv.URL + "=" + signer.Verifier().String())
	require.NoError(t, err)
	e.svc.Sealer.Witnesses = []audit.Witness{witness}

	e.session("one", 4)
	note1, err := e.svc.Sealer.Publish(ctx)
	require.NoError(t, err)
	opened, err := note.Open(note1, note.VerifierList(witness.Verifier))
	require.NoError(t, err, "the kept checkpoint carries the witness's cosignature:\n%s", note1)
	require.Equal(t, "witness.example", opened.Sigs[0].Name)
	e.session("two", 3)
	_, err = e.svc.Sealer.Publish(ctx)
	require.NoError(t, err, "the log grew: the witness cosigns again, from the proof of its last size")
	require.Greater(t, w.size, int64(7))
	for _, f := range e.findings() {
		require.NotContains(t, f, "not cosigned", "every checkpoint so far is cosigned")
	}
	kept, err := e.svc.Store.AuditCheckpoints(ctx)
	require.NoError(t, err)
	for _, k := range kept {
		_, err := note.Open([]byte(k), note.VerifierList(witness.Verifier))
		require.NoError(t, err, "every checkpoint kept is cosigned")
	}

	// A server that does not know the witness's last size (a restart) is
	// told it (409), and shows the proof from it.
	fresh := &Sealer{Store: e.svc.Store, Key: e.svc.Sealer.Key, Now: e.svc.Sealer.Now, Witnesses: []audit.Witness{witness}}
	before := w.size
	e.session("three", 2)
	_, err = fresh.Publish(ctx)
	require.NoError(t, err)
	require.Greater(t, w.size, before)

	// A history rewritten (and the tree rebuilt) is not cosigned again.
	e.rechain("one", 1, func(x *audit.Entry) { x.Identity = "operator:mallory" })
	e.rebuildTree()
	e.session("four", 2)
	_, err = fresh.Publish(ctx)
	require.ErrorIs(t, err, audit.ErrWitnessRefused)
	kept, err = e.svc.Store.AuditCheckpoints(ctx)
	require.NoError(t, err)
	_, err = note.Open([]byte(kept[len(kept)-1]), note.VerifierList(witness.Verifier))
	require.Error(t, err, "the checkpoint of the rewritten log is kept, but not cosigned")
	e.requireFinding("not cosigned by witness " + srv.URL)
}
