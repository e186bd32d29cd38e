package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Every entry of every session is also a leaf of one RFC 6962 Merkle tree
// (golang.org/x/mod/sumdb/tlog, as Go's checksum database), in the order
// written; its leaf data is the entry's stored JSON. The tree's head is
// published as a C2SP signed-note checkpoint; anyone holding an older one
// can check that the log only grew (a consistency proof) and that an
// entry is in it (an inclusion proof), offline, with the public key.

// Origin names the log in checkpoints.
const Origin = "paddock-audit-log"

// signer signs checkpoints with the server's Ed25519 key, as note does.
type signer struct {
	key  ed25519.PrivateKey
	hash uint32
}

// keyHash is note's key hash: the first four bytes of SHA-256 over the
// name, a newline, the algorithm byte (1: Ed25519, 4: cosignature/v1) and
// the public key.
func keyHash(name string, pub ed25519.PublicKey, alg byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write(append([]byte{alg}, pub...))
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func (s signer) Name() string                    { return Origin }
func (s signer) KeyHash() uint32                 { return s.hash }
func (s signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// VerifierKey is the public key in note's verifier-key form.
func VerifierKey(pub ed25519.PublicKey) (string, error) {
	return note.NewEd25519VerifierKey(Origin, pub)
}

// Checkpoint signs the head of a tree of size leaves with root hash root.
func Checkpoint(size int64, root tlog.Hash, key ed25519.PrivateKey) ([]byte, error) {
	pub := key.Public().(ed25519.PublicKey)
	text := fmt.Sprintf("%s\n%d\n%s\n", Origin, size, base64.StdEncoding.EncodeToString(root[:]))
	return note.Sign(&note.Note{Text: text}, signer{key, keyHash(Origin, pub, 1)})
}

// OpenCheckpoint verifies a signed checkpoint with pub and returns the
// tree's size and root.
func OpenCheckpoint(signed []byte, pub ed25519.PublicKey) (int64, tlog.Hash, error) {
	vkey, err := VerifierKey(pub)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return 0, tlog.Hash{}, fmt.Errorf("checkpoint: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 || lines[0] != Origin {
		return 0, tlog.Hash{}, fmt.Errorf("checkpoint: not a checkpoint of the %s", Origin)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 {
		return 0, tlog.Hash{}, fmt.Errorf("checkpoint: size %q", lines[1])
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return 0, tlog.Hash{}, fmt.Errorf("checkpoint: root hash %q", lines[2])
	}
	var root tlog.Hash
	copy(root[:], raw)
	return size, root, nil
}

// Proof is what `paddock audit prove` checks offline: an entry (its leaf
// data, at leaf Leaf) is in the tree of the checkpoint, and, given an
// older checkpoint's size, that tree is an extension of the older one.
type Proof struct {
	Checkpoint  string   `json:"checkpoint"`
	Leaf        int64    `json:"leaf"`
	Entry       string   `json:"entry"`
	Inclusion   []string `json:"inclusion"`
	OldSize     int64    `json:"oldSize,omitempty"`
	Consistency []string `json:"consistency,omitempty"`
}

// Check verifies a proof with pub: the checkpoint's signature, the
// entry's inclusion, and (when oldCheckpoint is given, signed by pub too)
// that the log only grew since it. It returns the entry.
func (p Proof) Check(pub ed25519.PublicKey, oldCheckpoint []byte) (Entry, error) {
	size, root, err := OpenCheckpoint([]byte(p.Checkpoint), pub)
	if err != nil {
		return Entry{}, err
	}
	inc, err := hashes(p.Inclusion)
	if err != nil {
		return Entry{}, err
	}
	if err := tlog.CheckRecord(inc, size, root, p.Leaf, tlog.RecordHash([]byte(p.Entry))); err != nil {
		return Entry{}, fmt.Errorf("the entry is not in the checkpoint's log: %w", err)
	}
	if oldCheckpoint != nil {
		oldSize, oldRoot, err := OpenCheckpoint(oldCheckpoint, pub)
		if err != nil {
			return Entry{}, fmt.Errorf("the older %w", err)
		}
		cons, err := hashes(p.Consistency)
		if err != nil {
			return Entry{}, err
		}
		if oldSize != p.OldSize {
			return Entry{}, fmt.Errorf("the consistency proof is for size %d, the older checkpoint's is %d", p.OldSize, oldSize)
		}
		if oldSize > size {
			return Entry{}, fmt.Errorf("the older checkpoint has %d entries, more than the log's %d: it shrank", oldSize, size)
		}
		// An empty log is a prefix of every log.
		if err := tlog.CheckTree(cons, size, root, oldSize, oldRoot); oldSize > 0 && err != nil {
			return Entry{}, fmt.Errorf("the log did not only grow since the older checkpoint: %w", err)
		}
	}
	var e Entry
	if err := json.Unmarshal([]byte(p.Entry), &e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Hashes encodes proof hashes for JSON.
func Hashes(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

func hashes(enc []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(enc))
	for i, s := range enc {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is malformed", i)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}
