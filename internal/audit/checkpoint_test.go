package audit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"
)

// memTree is an in-memory store of a tree's hashes, as the store keeps them.
type memTree struct{ hashes []tlog.Hash }

func (m *memTree) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = m.hashes[x]
	}
	return out, nil
}

func (m *memTree) add(t *testing.T, n int64, data []byte) {
	hs, err := tlog.StoredHashes(n, data, m)
	require.NoError(t, err)
	m.hashes = append(m.hashes, hs...)
}

// TestProofs: an entry's inclusion and the log's growth since an older
// checkpoint verify offline with the public key; a different entry, a
// checkpoint by another key, or an older checkpoint of a rewritten log
// do not.
func TestProofs(t *testing.T) {
	pub, priv := keys(t)
	_, otherPriv := keys(t)
	log := chain(t, 20)
	tree := &memTree{}
	var leaves [][]byte
	for i, e := range log {
		b, _ := json.Marshal(e)
		leaves = append(leaves, b)
		tree.add(t, int64(i), b)
	}
	checkpoint := func(size int64, k []byte) []byte {
		root, err := tlog.TreeHash(size, tree)
		require.NoError(t, err)
		c, err := Checkpoint(size, root, priv)
		if k != nil {
			c, err = Checkpoint(size, root, otherPriv)
		}
		require.NoError(t, err)
		return c
	}
	old, now := checkpoint(7, nil), checkpoint(20, nil)
	inc, err := tlog.ProveRecord(20, 5, tree)
	require.NoError(t, err)
	cons, err := tlog.ProveTree(20, 7, tree)
	require.NoError(t, err)
	p := Proof{Checkpoint: string(now), Leaf: 5, Entry: string(leaves[5]), Inclusion: Hashes(inc), OldSize: 7, Consistency: Hashes(cons)}
	e, err := p.Check(pub, old)
	require.NoError(t, err)
	require.Equal(t, log[5].Hash, e.Hash)

	bad := p
	bad.Entry = string(leaves[6])
	_, err = bad.Check(pub, old)
	require.ErrorContains(t, err, "not in the checkpoint's log")
	bad = p
	bad.Checkpoint = string(checkpoint(20, []byte("other")))
	_, err = bad.Check(pub, old)
	require.Error(t, err, "a checkpoint signed by another key")
	// An older checkpoint of a log rewritten since: not a prefix.
	rewritten := &memTree{}
	for i := range 7 {
		data := leaves[i]
		if i == 3 {
			data = []byte(`{"rewritten":true}`)
		}
		rewritten.add(t, int64(i), data)
	}
	root, err := tlog.TreeHash(7, rewritten)
	require.NoError(t, err)
	forkedOld, err := Checkpoint(7, root, priv)
	require.NoError(t, err)
	_, err = p.Check(pub, forkedOld)
	require.ErrorContains(t, err, "did not only grow")
}
